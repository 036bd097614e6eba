'use client';

import type { RouterOutputs } from '@once/api';
import type { LedgerVerdict, OpsLedgerResult, OpsLedgerRow } from '@once/api/ops';
import { useMutationState } from '@tanstack/react-query';
import { answeredByServer, errorWords } from '../../client/error-words.ts';
import { useTRPC } from '../../client/trpc-react.tsx';
import type { ChaosPart, ChaosSwitchName } from '../../demo/chaos-switchboard.ts';
import { shownPartState, switchLabel, useChaosStatus } from './chaos-switches.tsx';
import { verdictTone } from './ledger-comparison-table.tsx';
import { Time } from './ops-table.tsx';
import { useSceneMark } from './scene-mark.ts';

/** Each verdict in the words of the strip, counted: "1 charged twice". */
const VERDICT_WORDS: Record<LedgerVerdict, string> = {
  agrees: 'agree',
  not_charged: 'not charged yet',
  app_behind: 'charged and still being recorded',
  unverified: 'not checked',
  double_charge: 'charged twice',
  charged_but_app_declined_or_failed: 'charged but shown as not paid',
  succeeded_without_charge: 'shown as paid with no charge',
  mismatch: 'charged a different amount or intent',
};

type Tone = 'ok' | 'pending' | 'alarm';

const plural = (count: number, one: string, many = `${one}s`) =>
  `${count} ${count === 1 ? one : many}`;

const TONE_ORDER: Tone[] = ['alarm', 'pending', 'ok'];

/** How many rows have each verdict, the loudest first: `[['double_charge', 1], ...]`. */
function verdictCounts(rows: readonly OpsLedgerRow[]): [LedgerVerdict, number][] {
  const counts = new Map<LedgerVerdict, number>();
  for (const row of rows) counts.set(row.verdict, (counts.get(row.verdict) ?? 0) + 1);
  const rank = (verdict: LedgerVerdict) => TONE_ORDER.indexOf(verdictTone[verdict]);
  return [...counts].sort(([a], [b]) => rank(a) - rank(b));
}

const countWords = ([verdict, count]: [LedgerVerdict, number]) =>
  verdict === 'agrees' && count === 1 ? '1 agrees' : `${count} ${VERDICT_WORDS[verdict]}`;

const isAlarm = ([verdict]: [LedgerVerdict, number]) => verdictTone[verdict] === 'alarm';

/** Payments counted, their charges, and how they compare, for one set of rows. */
function countLine(rows: readonly OpsLedgerRow[], payments: string): { tone: Tone; text: string } {
  const charges = rows.reduce((sum, row) => sum + (row.processor?.chargeCount ?? 0), 0);
  const counted = `${payments}, ${plural(charges, 'charge')}`;
  if (rows.length === 0) return { tone: 'ok', text: `${counted}, nothing to compare yet` };
  const counts = verdictCounts(rows);
  if (counts.length === 1 && counts[0]![0] === 'agrees') {
    return { tone: 'ok', text: `${counted}, all agree` };
  }
  const tone = counts.some(isAlarm) ? 'alarm' : 'pending';
  return { tone, text: `${counted}: ${counts.map(countWords).join(', ')}` };
}

/**
 * The ledger comparison as one line: "10 payments, 10 charges, all agree", or what does not.
 * Only payments since the scene's start count, but an earlier payment's alarm still turns the
 * line red and is named.
 */
export function ledgerLine(
  result: OpsLedgerResult,
  limit = Number.POSITIVE_INFINITY,
  since: string | null = null,
): { tone: Tone; text: string } {
  const start = since ? Date.parse(since) : Number.NaN;
  const inScene = (row: OpsLedgerRow) => Number.isNaN(start) || Date.parse(row.createdAt) >= start;
  const rows = result.rows.filter(inScene);
  // A full page all inside the scene may leave out some of the scene's payments.
  const full = result.rows.length >= limit && rows.length === result.rows.length;
  const payments = `${full ? 'the latest ' : ''}${plural(rows.length, 'payment')}`;
  if (result.processor !== 'reachable') {
    const why =
      result.processor === 'no_account' ? 'no processor account' : 'processor unreachable';
    return { tone: 'pending', text: `${payments}; charges not checked (${why})` };
  }
  const line = countLine(rows, payments);
  const earlierRows = result.rows.filter((row) => !inScene(row));
  const earlier = verdictCounts(earlierRows).filter(isAlarm).map(countWords).join(', ');
  if (!earlier) return line;
  return { tone: 'alarm', text: `${line.text}; before this scene: ${earlier}` };
}

/** The parts with their restarts, in the launcher's order, each web as `shownPartState` shows it. */
export function stripParts(
  parts: readonly ChaosPart[],
  options: { webAnswering: boolean },
): { name: string; state: ChaosPart['state']; text: string; role?: string }[] {
  return parts.map((part) => {
    const state = shownPartState(part, options.webAnswering);
    const restarts = part.restarts > 0 ? `, restarted ${plural(part.restarts, 'time')}` : '';
    return {
      name: part.name,
      state,
      text: `${state}${restarts}`,
      ...(part.role ? { role: part.role } : {}),
    };
  });
}

/**
 * The last switch pressed, if it belongs to the scene being played: one pressed before "New
 * scene" is another scene's answer and is no longer shown. `since` is the scene mark (server
 * clock, the same machine as this browser in a demo).
 */
export function pressOfThisScene<T extends { submittedAt: number }>(
  press: T | undefined,
  since: string | null,
): T | undefined {
  if (!press || !since) return press;
  return press.submittedAt >= Date.parse(since) ? press : undefined;
}

/**
 * Where a new scene starts, on the server's clock (payments carry its times): after the
 * ledger read and after every payment it saw, so no payment already made is counted again.
 * "New scene" reads the ledger first: the last poll may be older than a payment just made.
 */
function sceneStart(ledger: OpsLedgerResult | undefined): string {
  const times = (ledger?.rows ?? []).map((row) => Date.parse(row.createdAt) + 1);
  const start = Math.max(ledger ? Date.parse(ledger.checkedAt) : Date.now(), ...times);
  return new Date(start).toISOString();
}

/**
 * A compact strip that sticks to the top of the cockpit: what the last chaos switch did, each
 * part's state, and the ledger's verdict, so the presenter never scrolls to see whether every
 * charge was made once. Reads only what the cockpit already asks for.
 */
export function VerdictStrip({
  tenantId,
  ledger,
  ledgerError,
  stuck,
  limit,
  readLedger,
}: {
  /** Whose scene mark to read: each merchant's cockpit counts its own scene. */
  tenantId: string;
  ledger: OpsLedgerResult | undefined;
  /** How many payments the cockpit asked the ledger for. */
  limit?: number;
  /** Why the last read of the ledger failed: no answer at all, or the server's refusal. */
  ledgerError: unknown;
  stuck: RouterOutputs['ops']['stuckPayments'] | undefined;
  /** Reads the ledger now; "New scene" starts after what it returns. */
  readLedger: () => Promise<OpsLedgerResult | undefined>;
}) {
  const trpc = useTRPC();
  const chaos = useChaosStatus();
  const presses = useMutationState({
    filters: { mutationKey: trpc.ops.chaosPress.mutationKey() },
    select: (mutation) => ({
      submittedAt: mutation.state.submittedAt,
      status: mutation.state.status,
      pressed: (mutation.state.variables as { switch: ChaosSwitchName } | undefined)?.switch,
      data: mutation.state.data as { switch: ChaosSwitchName; did: string } | undefined,
      error: mutation.state.error as Error | null,
    }),
  });
  const [since, setSince] = useSceneMark(tenantId);
  const lastPress = pressOfThisScene(presses.at(-1), since);
  const chaosData = chaos.data?.enabled ? chaos.data : undefined;
  // A switch that failed to answer because the web server is down is not a refusal.
  const webAnswering = !chaos.isError || answeredByServer(chaos.error);

  const verdict = ledgerError
    ? answeredByServer(ledgerError)
      ? { tone: 'alarm' as const, text: `Ledger not read: ${errorWords(ledgerError)}` }
      : {
          tone: 'pending' as const,
          text: 'Ledger not read: the web server is not answering (restarting?)',
        }
    : ledger
      ? ledgerLine(ledger, limit, since)
      : { tone: 'pending' as const, text: 'Reading the ledger…' };
  const stuckCount = stuck?.stuck ?? 0;

  return (
    <section className="verdict-strip" aria-label="At a glance" data-testid="verdict-strip">
      <p
        className={`strip-verdict strip-${verdict.tone}`}
        data-testid="strip-verdict"
        data-tone={verdict.tone}
      >
        <span className="strip-label">Ledger</span>{' '}
        <a href="#ops-ledger-title">
          {verdict.tone === 'alarm' ? '⚠ ' : verdict.tone === 'ok' ? '✓ ' : ''}
          {verdict.text}
        </a>
        {stuckCount > 0 ? (
          <span className="strip-stuck"> · ⚠ {plural(stuckCount, 'payment')} stuck</span>
        ) : null}
      </p>
      <p className="strip-scene" data-testid="strip-scene">
        <span className="muted">
          {since ? (
            <>
              counting since <Time iso={since} />
            </>
          ) : (
            'counting every payment'
          )}
        </span>{' '}
        <button
          type="button"
          className="link"
          aria-describedby={`${tenantId}-scene-help`}
          onClick={() => void readLedger().then((read) => setSince(sceneStart(read ?? ledger)))}
        >
          New scene
        </button>
        {since ? (
          <>
            {' · '}
            <button type="button" className="link" onClick={() => setSince(null)}>
              Count all
            </button>
          </>
        ) : null}
        <span id={`${tenantId}-scene-help`} className="visually-hidden">
          Counts only the payments made from now on; nothing is deleted, and the ledger table still
          shows every payment.
        </span>
      </p>
      {chaosData ? (
        <>
          <ul className="strip-parts" aria-label="Parts" data-testid="strip-parts">
            {stripParts(chaosData.parts, { webAnswering }).map((part) => (
              <li key={part.name} data-strip-part={part.name} data-state={part.state}>
                <span className={`strip-dot strip-dot-${part.state}`} aria-hidden="true" />
                {part.name} <span className="visually-hidden">is</span>{' '}
                <span className="strip-state">{part.text}</span>
                {part.role ? <span className="strip-role"> ({part.role})</span> : null}
              </li>
            ))}
          </ul>
          <p className="strip-press" data-testid="strip-press">
            <span className="strip-label">Last switch</span>{' '}
            {!lastPress ? (
              <span className="muted">none pressed yet</span>
            ) : lastPress.status === 'pending' ? (
              <span aria-busy="true">
                {lastPress.pressed ? `${switchLabel(lastPress.pressed)}: ` : ''}pressing…
              </span>
            ) : lastPress.status === 'error' ? (
              <span className="error">
                {answeredByServer(lastPress.error)
                  ? (lastPress.error?.message ?? 'refused')
                  : 'the web server did not answer'}
              </span>
            ) : lastPress.data ? (
              <a href="#chaos-title">
                {switchLabel(lastPress.data.switch)}: {lastPress.data.did}
              </a>
            ) : null}
          </p>
        </>
      ) : null}
    </section>
  );
}
