import type { UpstreamAttempt } from './fault-proxy.ts';
import { groupBy } from './group.ts';
import type { LedgerCharge } from './ledger.ts';
import type { Violation } from './violations.ts';

/**
 * The semantics a team declares its API follows:
 * - `ietf`: draft-ietf-httpapi-idempotency-key-header: 400 without a key, 422 on reuse with
 *   another body, 409 while in flight, errors as application/problem+json;
 * - `stripe`: a retry replays the stored answer with `Idempotent-Replayed: true`.
 * Both demand that a retry replays rather than runs again.
 */
export type Preset = 'ietf' | 'stripe';

export interface ConformanceInput {
  preset: Preset;
  /** What the fault proxy sent upstream and heard back. */
  attempts: UpstreamAttempt[];
  /** The preset's direct probes (the IETF one's). */
  probes: ProbeAnswer[];
  /** The processor's charges, when the team gave a ledger. */
  charges?: LedgerCharge[];
}

/** Checks a run's observations against a preset; every violation names its rule. */
export function checkConformance(input: ConformanceInput): Violation[] {
  const violations: Violation[] = [
    ...checkReplays(input.attempts, input.preset),
    ...(input.preset === 'ietf' ? checkIetf(input.attempts, input.probes) : []),
  ];
  if (input.charges) violations.push(...checkCharges(input.charges));
  return violations;
}

/** For each key and body, every successful answer after the first must be that answer again. */
function checkReplays(attempts: UpstreamAttempt[], preset: Preset): Violation[] {
  const violations: Violation[] = [];
  const successes = groupBy(
    attempts.filter((a) => a.key !== null && isSuccess(a.status)),
    (a) => `${a.key}\n${a.bodyDigest}`,
  );
  for (const group of successes.values()) {
    const [first, ...later] = group.sort((a, b) => a.endedAt - b.endedAt);
    for (const again of later) {
      if (again.body !== first!.body || again.status !== first!.status) {
        // Both ran. At the same time: nothing guarded the key in flight; one after the
        // other: the finished key did not replay.
        const overlapped = again.startedAt < first!.endedAt;
        violations.push({
          kind: overlapped ? 'in_flight_not_rejected' : 'response_not_replayed',
          key: again.key,
          detail: `first ${first!.status} ${clip(first!.body)}; then ${again.status} ${clip(again.body)} (${again.origin})`,
        });
      } else if (preset === 'stripe' && !again.replayed) {
        violations.push({
          kind: 'replay_not_marked',
          key: again.key,
          detail: `a repeated ${again.status} without Idempotent-Replayed: true (${again.origin})`,
        });
      }
    }
  }
  return violations;
}

function checkIetf(attempts: UpstreamAttempt[], probes: ProbeAnswer[]): Violation[] {
  const violations: Violation[] = [];
  const expected = { missing_key: 400, reused_key: 422, in_flight: 409 } as const;
  for (const probe of probes) {
    // Two requests at once may still reach the server one after the other: an identical
    // answer to both (a replay) shows no second run, so only a 409 or a replay passes.
    const replayed =
      probe.probe === 'in_flight' &&
      probe.answers.length === 2 &&
      probe.answers[0]!.status === probe.answers[1]!.status &&
      probe.answers[0]!.body === probe.answers[1]!.body;
    if (!probe.statuses.includes(expected[probe.probe]) && !replayed) {
      violations.push({
        kind: `${probe.probe}_not_rejected`,
        key: probe.key,
        detail: `expected ${expected[probe.probe]}, got ${probe.statuses.join(' and ')}`,
      });
    }
  }
  const errors = [
    ...attempts.map((a) => ({ key: a.key, status: a.status, contentType: a.contentType })),
    ...probes.flatMap((p) =>
      p.answers.map((a) => ({ key: p.key, status: a.status, contentType: a.contentType })),
    ),
  ];
  for (const answer of errors) {
    if (![400, 409, 422].includes(answer.status ?? 0)) continue;
    if (!answer.contentType?.startsWith('application/problem+json')) {
      violations.push({
        kind: 'error_not_problem_json',
        key: answer.key,
        detail: `${answer.status} as ${answer.contentType ?? 'no content type'}`,
      });
    }
  }
  return violations;
}

function checkCharges(charges: LedgerCharge[]): Violation[] {
  return [...groupBy(charges, (c) => c.key)]
    .filter(([, found]) => found.length > 1)
    .map(([key, found]) => ({ kind: 'double_charge', key, detail: `${found.length} charges` }));
}

function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** The IETF preset's direct questions to the target, outside the fault proxy. */
type ProbeName = 'missing_key' | 'reused_key' | 'in_flight';

export interface ProbeAnswer {
  probe: ProbeName;
  key: string | null;
  /** The statuses of the request(s) that test the rule. */
  statuses: number[];
  answers: { status: number; contentType: string | null; body: string }[];
}

const IN_FLIGHT_PAIRS = 3;

/**
 * Asks the target the three IETF questions: a request without a key; a key sent again with
 * another body after its first request was answered; two requests with one new key at the
 * same moment (three times, each with a new key).
 */
export async function probeIetf(options: {
  url: string;
  path: string;
  keyPrefix: string;
  body: (variant: number) => unknown;
}): Promise<ProbeAnswer[]> {
  const send = async (key: string | null, body: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key !== null) headers['idempotency-key'] = key;
    const response = await fetch(`${options.url}${options.path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: await response.text(),
    };
  };

  const missing = await send(null, options.body(0));

  const reusedKey = `${options.keyPrefix}probe-reuse`;
  const first = await send(reusedKey, options.body(1));
  const reused = await send(reusedKey, options.body(2));

  // A race may be lost by chance: ask IN_FLIGHT_PAIRS times, with a new key each.
  const inFlight: ProbeAnswer[] = [];
  for (let i = 0; i < IN_FLIGHT_PAIRS; i++) {
    const key = `${options.keyPrefix}probe-in-flight-${i}`;
    const pair = await Promise.all([
      send(key, options.body(3 + i)),
      send(key, options.body(3 + i)),
    ]);
    inFlight.push({ probe: 'in_flight', key, statuses: pair.map((a) => a.status), answers: pair });
  }
  return [
    { probe: 'missing_key', key: null, statuses: [missing.status], answers: [missing] },
    { probe: 'reused_key', key: reusedKey, statuses: [reused.status], answers: [first, reused] },
    ...inFlight,
  ];
}
