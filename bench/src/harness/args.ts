/** Command-line options of `npm run bench`. */
export interface BenchArgs {
  /** Smoke run: 1-2 s per scenario, small data sets. */
  quick: boolean;
  /** Run only the scenarios with these names (repeatable, or comma-separated). */
  only: string[];
  /**
   * Re-render docs/benchmarks.md from these results files (with the current analysis); no run.
   * The first is the full run; a later one's scenarios replace or join it, each marked with its run.
   */
  render: string[];
  /**
   * The peers scenario's interleaved rounds and seconds per variant per round, for a dedicated
   * long run (`--only peers --rounds 8 --round-sec 8`); unset, the scenario's own short rounds.
   */
  rounds?: number;
  roundSec?: number;
}

/**
 * Parses `--quick`, `--only <name>` (also `--only=a,b`), `--render <results.json>` (repeatable),
 * `--rounds <n>` and `--round-sec <s>`.
 */
export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { quick: false, only: [], render: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--quick') args.quick = true;
    else if (arg === '--only') args.only.push(...splitNames(argv[++i]));
    else if (arg.startsWith('--only=')) args.only.push(...splitNames(arg.slice('--only='.length)));
    else if (arg === '--render' && argv[i + 1]) args.render.push(argv[++i]!);
    else if (arg === '--rounds') args.rounds = positive(arg, argv[++i], 2);
    else if (arg === '--round-sec') args.roundSec = positive(arg, argv[++i], 1);
    else if (arg === '--') continue;
    else
      throw new Error(
        `unknown argument ${arg}; use --quick, --only <scenario>, --rounds <n> and/or --round-sec <s>`,
      );
  }
  return args;
}

function splitNames(value: string | undefined): string[] {
  if (!value) throw new Error('--only needs a scenario name');
  return value.split(',').filter(Boolean);
}

function positive(flag: string, value: string | undefined, least: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < least)
    throw new Error(`${flag} needs a whole number >= ${least}`);
  return n;
}
