import { execFileSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ViolationKind } from '@once/chaos';
import { plantedCopy, removePlantedCopy } from '@once/scripts/planted-copy';

export { removePlantedCopy };

/** The folder holding one `<name>.patch` per planted bug. */
const PLANTED_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The repository the patches apply to (`e2e/chaos/planted` is three levels down). */
const REPO_ROOT = path.resolve(PLANTED_DIR, '../../..');

/** A planted bug: a tiny patch that reopens one known path to a double charge or lost payment. */
export interface PlantedBug {
  name: string;
  patchFile: string;
  /** The patch changes code the web bundle contains: the copy needs its own `next build`. */
  needsWebBuild: boolean;
  /**
   * The violation kinds that prove this bug: a run catches it only by reporting one of
   * these (any other violation is some other failure, or a flake, not this bug).
   */
  provedBy: readonly ViolationKind[];
  /** The chaos options that reach it when the command line names none (default: the `ci` profile). */
  profileArgs: readonly string[];
}

/**
 * What each planted bug does wrong, as the checker names it (docs/chaos.md, "Planted bugs").
 * A patch without an entry here fails `plantedBugs()`: a new bug must say what catches it.
 */
const PROVED_BY: Record<string, readonly ViolationKind[]> = {
  // Every attempt charges afresh: one payment, several charges.
  'no-downstream-key': ['double_charge'],
  // A retry or reload sends a new key: a second payment for the same cart (two payments
  // answered to one intent, or charges spread over the intent's payments).
  'ui-new-key-on-retry': ['duplicate_payment', 'double_charge'],
  // Concurrent duplicates both make a payment, and both are charged.
  'non-atomic-claim': ['duplicate_payment', 'double_charge'],
  // Another tenant's stored answer: a 422 "key reused" for the only cart a client sent, or
  // an ok answer naming a payment its own tenant does not hold.
  'keys-not-scoped-by-tenant': ['wrongly_refused', 'missing_payment'],
  // A stale worker records and confirms a second intent: two charges for one payment.
  'no-lease-fencing': ['double_charge'],
  // A charged payment settled `failed` on a 404: its state disagrees with the ledger.
  'reconciler-not-found-is-not-charged': ['state_disagrees_with_ledger'],
  // A refund whose answer was lost is sent again, unkeyed and unlooked-for: money back beyond
  // the app's refunds (or a second booking under its key).
  'refund-without-downstream-key': ['double_refund'],
  // A capture whose answer was lost is sent as new (a fresh key, no look at the intent): the
  // processor refuses the second, the worker records the refusal, and the payment stays
  // authorised while the ledger holds its capture.
  'capture-fresh-key-on-retry': ['state_disagrees_with_ledger'],
  // Processor keys from the payment id: a payment re-created after a failover lost its row
  // (async replication) gets a new key, and the processor charges the checkout again.
  'payment-id-downstream-key': ['double_charge'],
  // The refund cap read before the payment's lock: refunds sent at once under their own keys
  // are all accepted, past what was received.
  'refund-cap-before-lock': ['over_refund', 'double_refund'],
  // Money-action keys scoped by transport: one key refunds once per transport, and a capture's
  // key refunds.
  'money-keys-by-transport': ['key_reuse_accepted', 'double_refund', 'over_refund'],
  // A void and a capture of one payment both accepted when two operators race.
  'void-and-capture-both-act': ['racing_actions_both_accepted'],
};

/** Bugs only a replicated database reaches: their run's profile. */
const PROFILE_ARGS: Record<string, readonly string[]> = {
  'payment-id-downstream-key': ['--profile', 'failover', '--mode', 'async'],
};

/**
 * Whether a run's violation kinds prove the bug: at least one of its own kinds. A run that
 * failed only with other violations did not catch this bug.
 *
 * @example
 * provesBug(plantedBugs()[0]!, ['money_not_conserved']); // false for no-downstream-key
 */
export function provesBug(bug: PlantedBug, kinds: readonly string[]): boolean {
  return kinds.some((k) => (bug.provedBy as readonly string[]).includes(k));
}

/** The violation kinds in a chaos run's output (its `chaos: result:` line). */
export function violationKindsIn(output: string): string[] {
  const line = /^chaos: result: (\d+) violation\(s\)(?: \(([^)]*)\))?$/m.exec(output);
  return line?.[2] ? line[2].split(',').map((k) => k.trim()) : [];
}

/**
 * The model search's planted bugs the chaos suite proves too (`test/money-model/planted`): the
 * patches live there, once, and are listed here by name.
 */
const MODEL_SEARCH_PLANTED_DIR = path.join(REPO_ROOT, 'test/money-model/planted');
const FROM_MODEL_SEARCH = [
  'refund-cap-before-lock',
  'money-keys-by-transport',
  'void-and-capture-both-act',
];

/** Every planted bug, by file name. */
export function plantedBugs(): PlantedBug[] {
  const patches = [
    ...readdirSync(PLANTED_DIR)
      .filter((f) => f.endsWith('.patch'))
      .map((f) => path.join(PLANTED_DIR, f)),
    ...FROM_MODEL_SEARCH.map((name) => path.join(MODEL_SEARCH_PLANTED_DIR, `${name}.patch`)),
  ];
  return patches
    .sort((a, b) => path.basename(a).localeCompare(path.basename(b)))
    .map((patchFile) => {
      const f = path.basename(patchFile);
      // From the repository's root: in a subdirectory `git apply` ignores every path outside it.
      const touched = execFileSync('git', ['apply', '--numstat', patchFile], {
        encoding: 'utf8',
        cwd: REPO_ROOT,
      });
      const name = f.replace(/\.patch$/, '');
      const provedBy = PROVED_BY[name];
      if (!provedBy)
        throw new Error(`planted bug ${name}: name the violations that prove it in PROVED_BY`);
      return {
        name,
        patchFile,
        needsWebBuild: /(apps\/web|packages\/(api|idempotency|db))\//.test(touched),
        provedBy,
        profileArgs: PROFILE_ARGS[name] ?? ['--profile', 'ci'],
      };
    });
}

/** Whether the patch still applies to `repoRoot` (a patch that no longer applies is a failure). */
export function patchApplies(bug: PlantedBug, repoRoot: string): { ok: boolean; error: string } {
  try {
    execFileSync('git', ['apply', '--check', bug.patchFile], { cwd: repoRoot, stdio: 'pipe' });
    return { ok: true, error: '' };
  } catch (error) {
    return { ok: false, error: String((error as { stderr?: Buffer }).stderr ?? error) };
  }
}

/**
 * A temporary copy of the committed tree with the bug applied (`plantedCopy`); the web build is
 * reused unless the patch touches code the web bundle contains.
 */
export function preparePlantedCopy(bug: PlantedBug, repoRoot: string): string {
  return plantedCopy(repoRoot, bug.patchFile, { reuseWebBuild: !bug.needsWebBuild });
}

/**
 * Runs the chaos CLI inside a planted copy for one seed; resolves with its exit code
 * (1: a violation was reported) and the output's last lines. Aborting `signal` sends the
 * run SIGTERM, on which it stops its system and exits.
 */
export function runChaosIn(
  copy: string,
  args: string[],
  signal?: AbortSignal,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'e2e/chaos/main.ts', ...args], {
      cwd: copy,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
      killSignal: 'SIGTERM',
    });
    // The abort's own error event: the exit that follows resolves the run.
    child.on('error', () => {});
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('exit', (code) => resolve({ code, output }));
  });
}
