import type { BlackBoxResult } from './black-box.ts';
import type { CheckResult } from './checker.ts';
import type { Achieved, Coverage } from './coverage.ts';
import { groupBy } from './group.ts';
import type {
  ClientEvent,
  HistoryEvent,
  LifecycleEvent,
  MarkEvent,
  NemesisEvent,
} from './history.ts';
import type { CoverageFloors } from './schedule.ts';
import type { Snapshot } from './target.ts';
import { VIOLATIONS, type Violation, type ViolationKind } from './violations.ts';

/** A black-box run as Markdown for a CI summary: what was sent, the faults, violations by name. */
export function markdownReport(result: BlackBoxResult): string {
  const lines = [
    `# once-chaos: ${result.violations.length === 0 ? 'passed' : `${result.violations.length} violation(s)`}`,
    '',
    `Target ${result.target}, preset \`${result.preset}\`, seed ${result.seed}, ${result.durationMs / 1000} s.`,
    '',
    '| measure | count |',
    '|---|---|',
    `| operations (one key each) | ${result.operations} |`,
    `| client requests (with retries) | ${result.clientRequests} |`,
    `| requests that reached the target (with the proxy's copies) | ${result.upstreamRequests} |`,
    `| answers ok / fail / none | ${result.outcomes.ok} / ${result.outcomes.fail} / ${result.outcomes.info} |`,
    `| operations given up | ${result.gaveUp} |`,
    `| ledger charges read | ${result.charges ?? 'no ledger given'} |`,
    '',
    '## Faults injected',
    '',
    '| fault | count |',
    '|---|---|',
    ...Object.entries(result.faults).map(([kind, count]) => `| ${kind} | ${count} |`),
    ...(result.downstreamFaults
      ? Object.entries(result.downstreamFaults)
          .filter(([, count]) => count > 0)
          .map(([kind, count]) => `| ${kind} (processor side) | ${count} |`)
      : []),
    '',
    ...violationsSection(result.violations, 5, (v) => [
      `- key \`${v.key ?? '(none)'}\`: ${v.detail}`,
    ]),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * `## Violations`: for each kind, what it means and the first `shown` of its violations,
 * each as `entry` makes it.
 */
function violationsSection(
  violations: readonly Violation[],
  shown: number,
  entry: (violation: Violation) => string[],
): string[] {
  const lines = ['## Violations', ''];
  const byKind = groupBy(violations, (v) => v.kind);
  if (byKind.size === 0) lines.push('None.');
  for (const [kind, found] of byKind) {
    lines.push(`### ${kind} (${found.length})`, '', VIOLATIONS[kind], '');
    for (const violation of found.slice(0, shown)) lines.push(...entry(violation));
    if (found.length > shown) lines.push(`- and ${found.length - shown} more`);
    lines.push('');
  }
  return lines;
}

/** A black-box run as JUnit XML: one test case per rule checked, failed when it was violated. */
export function junitReport(result: BlackBoxResult): string {
  return junit({
    suite: `once-chaos seed ${result.seed}`,
    classname: `once-chaos.${result.preset}`,
    rules: checkedRules(result),
    violations: result.violations,
    seconds: result.durationMs / 1000,
  });
}

/** JUnit XML: one test case per rule, failed when the run violated it. */
function junit(run: {
  suite: string;
  classname: string;
  rules: readonly ViolationKind[];
  violations: readonly Violation[];
  seconds: number;
}): string {
  const byKind = groupBy(run.violations, (v) => v.kind);
  const cases = run.rules.map((kind) => {
    const found = byKind.get(kind) ?? [];
    const failure =
      found.length === 0
        ? ''
        : `\n      <failure message="${escapeXml(`${found.length} violation(s): ${VIOLATIONS[kind]}`)}">${escapeXml(
            found.map((v) => `${v.key ?? v.intent ?? '(none)'}: ${v.detail}`).join('\n'),
          )}</failure>\n    `;
    return `    <testcase classname="${run.classname}" name="${kind}">${failure}</testcase>`;
  });
  const failures = run.rules.filter((kind) => byKind.has(kind)).length;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites tests="${cases.length}" failures="${failures}">`,
    `  <testsuite name="${escapeXml(run.suite)}" tests="${cases.length}" failures="${failures}" time="${run.seconds}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

/** The rules only a black-box run checks: what the API answered, by the preset's semantics. */
const ANSWER_RULES: readonly ViolationKind[] = [
  'missing_key_not_rejected',
  'reused_key_not_rejected',
  'in_flight_not_rejected',
  'error_not_problem_json',
  'response_not_replayed',
  'replay_not_marked',
];

function checkedRules(result: BlackBoxResult): ViolationKind[] {
  const rules: ViolationKind[] = ['response_not_replayed'];
  if (result.preset === 'stripe') rules.push('replay_not_marked');
  if (result.preset === 'ietf') rules.push(...ANSWER_RULES.slice(0, 4));
  if (result.charges !== null) rules.push('double_charge');
  return rules;
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&"]/g,
    (char) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[char]!,
  );
}

export interface RunSummary {
  seed: number;
  profile: string;
  replay: string;
  intents: number;
  browserIntents: number;
  /** Browser customers that started before the clients' deadline (the rest never ran). */
  browserIntentsRun: number;
  /** Browser customers whose checkout made a payment, and how many of those succeeded. */
  browserWithPayment: number;
  browserSucceeded: number;
  durationMs: number;
  /** Intents whose key has a payment in the app, and how many of those are terminal. */
  withPayment: number;
  terminal: number;
  /** From the heal until no payment was left non-terminal (clients' retries included). */
  convergedAfterHealMs: number;
  check: CheckResult;
  coverage: Coverage;
  /** The work the run did, in the terms of the profile's floors. */
  achieved: Achieved;
  floors?: Partial<CoverageFloors>;
  /** Clients (HTTP or browser) that threw instead of finishing their checkout. */
  clientCrashes: string[];
  /** Floors the run fell short of, and client crashes: a run with any proves too little. */
  shortfalls: string[];
}

/** Milliseconds as seconds for people: `12.3 s`. */
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A replicated database's failovers: lost acknowledged commits are a count in async mode. */
function failoverRows(f: CheckResult['failover']): string[] {
  if (!f) return [];
  const gone = Object.entries(f.goneInFailovers).map(([t, n]) => `${n} ${t}`);
  return [
    `| failovers (${f.mode}) | ${f.failovers} |`,
    `| lost acknowledged commits: payments / refunds | ${f.lostAcknowledged.payments.length} / ${f.lostAcknowledged.refunds.length}${f.mode === 'async' ? ' (counted: asynchronous replication)' : ''} |`,
    `| rows gone in failovers, acknowledged or not | ${gone.join(', ') || 'none'} |`,
    `| rows resurrected | ${f.resurrected.length} |`,
  ];
}

/**
 * Everything that happened to one intent, in order: its client's requests, the nemesis'
 * faults while it was in flight, and what the databases say (ledger, outbox, webhooks).
 */
function intentTimeline(
  intent: string | undefined,
  violation: Violation,
  events: readonly HistoryEvent[],
  snapshot: Snapshot,
  startedAt: number,
): string[] {
  const own = events.filter((e): e is ClientEvent => 'op' in e && e.intent === intent);
  const from = (own[0]?.at ?? 0) - 2_000;
  const to = (own.at(-1)?.at ?? Number.MAX_SAFE_INTEGER) + 2_000;
  const paymentIds = new Set([violation.paymentId, ...own.map((e) => e.paymentId)].filter(Boolean));
  const keys = new Set(own.map((e) => e.key));
  const payments = snapshot.payments.filter(
    (p) =>
      paymentIds.has(p.id) || (p.tenantId === violation.tenantId && keys.has(p.idempotencyKey)),
  );
  for (const p of payments) paymentIds.add(p.id);
  const lines: { at: number; text: string }[] = [];
  for (const e of own) {
    const what =
      e.type === 'invoke'
        ? `${e.process} ${e.f} invoke key=${e.key}`
        : `${e.process} ${e.f} ${e.type}${e.status ? ` ${e.status}` : ''}${e.paymentId ? ` ${e.paymentId}` : ''}${e.state ? ` shown=${e.state}` : ''}${e.replayed ? ' replayed' : ''}${e.error ? ` (${e.error})` : ''}${e.lostResponse ? ' [response lost]' : ''}`;
    lines.push({ at: e.at, text: what });
  }
  for (const e of events) {
    if ((e.type === 'nemesis' || e.type === 'process') && e.at >= from && e.at <= to) {
      lines.push({
        at: e.at,
        text:
          e.type === 'nemesis'
            ? `nemesis ${e.phase} ${e.kind} ${e.target}${e.detail ? ` (${e.detail})` : ''}`
            : `process ${e.process} ${e.event}`,
      });
    }
  }
  for (const p of payments) {
    lines.push({
      at: p.createdAt - startedAt,
      text: `app payment ${p.id} created (key ${p.idempotencyKey}, ${p.amount})`,
    });
    lines.push({
      at: p.updatedAt - startedAt,
      text: `app payment ${p.id} last changed: ${p.status}`,
    });
  }
  for (const l of snapshot.ledger) {
    if (l.paymentId && paymentIds.has(l.paymentId))
      lines.push({
        at: l.createdAt - startedAt,
        text: `ledger ${l.kind} ${l.amount} ${l.paymentIntentId} for ${l.paymentId}`,
      });
  }
  for (const b of snapshot.backstage) {
    if (paymentIds.has(b.paymentId))
      lines.push({ at: b.at - startedAt, text: `${b.what} (${b.paymentId})` });
  }
  return lines.sort((a, b) => a.at - b.at).map((l) => `  ${seconds(l.at).padStart(8)}  ${l.text}`);
}

/** A target run as markdown: seed and replay command, counts, coverage, convergence, violations with timelines. */
export function runReport(
  summary: RunSummary,
  events: readonly HistoryEvent[],
  snapshot: Snapshot,
  startedAt: number,
): string {
  const { check, coverage } = summary;
  const verdict =
    check.violations.length > 0
      ? `FAIL: ${check.violations.length} violation(s)`
      : summary.shortfalls.length > 0
        ? `FAIL: no violation, but the run proves too little (${summary.shortfalls.join('; ')})`
        : 'PASS: no violation';
  const out = [
    `# Chaos run, seed ${summary.seed} (${summary.profile})`,
    '',
    `**${verdict}**`,
    '',
    `Replay: \`${summary.replay}\``,
    '',
    '| | |',
    '|---|---|',
    `| intents | ${summary.intents} (${summary.browserIntents} in a browser, ${summary.browserIntentsRun} of them let in, ${coverage.browserCustomersPaying} sent a checkout) |`,
    `| browser customers with a payment (succeeded) | ${summary.browserWithPayment} (${summary.browserSucceeded}) |`,
    `| intents with a payment (terminal) | ${summary.withPayment} (${summary.terminal}) |`,
    `| requests | ${coverage.requests.ok} ok, ${coverage.requests.fail} fail, ${coverage.requests.info} info |`,
    `| payments / ledger entries | ${snapshot.payments.length} / ${snapshot.ledger.length} |`,
    `| run time | ${seconds(summary.durationMs)} |`,
    `| converged after heal | ${seconds(summary.convergedAfterHealMs)} (clients' last retries included) |`,
    `| payments settled after heal | p50 ${seconds(check.convergence.p50)}, p99 ${seconds(check.convergence.p99)}, max ${seconds(check.convergence.max)} (${check.convergence.samples} payments) |`,
    ...failoverRows(check.failover),
    '',
    '## Coverage',
    '',
    '| counter | value |',
    '|---|---|',
    ...Object.entries(coverage.injected)
      .sort()
      .map(([k, v]) => `| fired (bit) / injected: ${k} | ${coverage.fired[k] ?? 0} / ${v} |`),
    `| kills inside an ambiguity window | ${coverage.killsInAmbiguityWindow} |`,
    `| lost responses (request committed) | ${coverage.lostResponses} (${coverage.lostResponsesCommitted}) |`,
    `| lease takeovers | ${coverage.leaseTakeovers} |`,
    `| stalled workers fenced at their first write after a takeover | ${coverage.staleWorkersFenced} |`,
    `| reconciler reads of a recorded intent answered 404 | ${coverage.unreadableIntentsReconciled} |`,
    `| reads of a lagging object answered 404 (processor's count) | ${coverage.laggedReadsAnswered404} |`,
    `| pauses that landed inside a job | ${coverage.pausesInsideJob} |`,
    `| key expiries crossed by a late duplicate | ${coverage.expiriesCrossed} |`,
    `| replays served | ${coverage.replaysServed} |`,
    `| money flows: authorised / captured / voided payments | ${coverage.money.authorized} / ${coverage.money.captured} / ${coverage.money.voided} |`,
    `| money flows: refunds succeeded / refused up front | ${coverage.money.refundsSucceeded} / ${coverage.money.refundsRefused} |`,
    `| money flows: double-clicks / dropped answers / capture and refund faults that bit | ${coverage.money.doubleClicks} / ${coverage.money.lostAnswers} / ${coverage.money.faultsBit} |`,
    `| rude operators: races (lost) / keys of another operation refused 422 / signed-out sessions refused 401 / requests over REST or GraphQL under a tRPC key | ${coverage.money.rude.races} (${coverage.money.rude.racesLost}) / ${coverage.money.rude.keyReuseRefused} / ${coverage.money.rude.revokedRefused} / ${coverage.money.rude.acrossTransports} |`,
    `| 3-D Secure: challenges completed / failed / left / redirects lost; payments canceled | ${coverage.threeDSecure.completed} / ${coverage.threeDSecure.failed} / ${coverage.threeDSecure.left} / ${coverage.threeDSecure.redirectsLost}; ${coverage.threeDSecure.canceled} |`,
    `| fault kinds never fired | ${coverage.neverFired.join(', ') || 'none'} |`,
    `| client crashes | ${summary.clientCrashes.length} |`,
    '',
    '## Work done against the floors',
    '',
    '| counter | achieved | floor |',
    '|---|---|---|',
    ...Object.entries(summary.achieved).map(
      ([k, v]) => `| ${k} | ${v} | ${summary.floors?.[k as keyof CoverageFloors] ?? '-'} |`,
    ),
    '',
  ];
  if (summary.clientCrashes.length > 0)
    out.push('## Client crashes', '', ...summary.clientCrashes.map((c) => `- ${c}`), '');
  out.push(
    ...violationsSection(check.violations, 10, (v) => [
      `- ${v.intent ? `intent ${v.intent}` : ''}${v.tenantId ? ` (${v.tenantId})` : ''}: ${v.detail}`,
      ...(v.intent || v.paymentId
        ? ['', '```', ...intentTimeline(v.intent, v, events, snapshot, startedAt), '```', '']
        : []),
    ]),
  );
  return out.join('\n');
}

/** A target run as JUnit XML: one test case per rule the checker holds it to. */
export function runJunit(summary: RunSummary): string {
  return junit({
    suite: `chaos seed ${summary.seed} (${summary.profile})`,
    classname: `chaos.${summary.profile}`,
    rules: (Object.keys(VIOLATIONS) as ViolationKind[]).filter((k) => !ANSWER_RULES.includes(k)),
    violations: summary.check.violations,
    seconds: summary.durationMs / 1000,
  });
}

/**
 * A timeline picture: one lane per process (clients and system processes), nemesis faults
 * as red bars on the lane they hit, heal and convergence as vertical lines.
 */
export function timelineSvg(events: readonly HistoryEvent[]): string {
  const lanes: string[] = [];
  const laneOf = (name: string) => {
    if (!lanes.includes(name)) lanes.push(name);
    return lanes.indexOf(name);
  };
  for (const name of ['web', 'processor', 'worker-1', 'worker-2', 'worker-3', 'postgres']) {
    const hit = (e: HistoryEvent) =>
      (e.type === 'nemesis' && e.target === name) || (e.type === 'process' && e.process === name);
    if (events.some(hit)) laneOf(name);
  }
  const end = Math.max(1, ...events.map((e) => e.at));
  const width = 1200;
  const left = 110;
  const x = (at: number) => left + (at / end) * (width - left - 10);
  const shapes: string[] = [];
  const starts = new Map<string, NemesisEvent>();
  for (const e of events) {
    if (e.type !== 'nemesis') continue;
    if (e.phase === 'start') {
      starts.set(e.id, e);
      continue;
    }
    const x0 = x(starts.get(e.id)?.at ?? e.at);
    shapes.push(
      `<rect x="${x0.toFixed(1)}" y="${laneOf(e.target) * 24 + 4}" width="${Math.max(2, x(e.at) - x0).toFixed(1)}" height="16" fill="#d33" opacity="0.75"><title>${escapeXml(`${e.kind} ${e.target} ${e.detail ?? ''}`)}</title></rect>`,
    );
  }
  const opStart = new Map<number, ClientEvent>();
  for (const e of events) {
    if (!('op' in e)) continue;
    if (e.type === 'invoke') {
      opStart.set(e.op, e);
      continue;
    }
    const x0 = x(opStart.get(e.op)?.at ?? e.at);
    const colour = e.type === 'ok' ? '#2a2' : e.type === 'fail' ? '#888' : '#e90';
    shapes.push(
      `<rect x="${x0.toFixed(1)}" y="${laneOf(e.process) * 24 + 8}" width="${Math.max(1, x(e.at) - x0).toFixed(1)}" height="8" fill="${colour}" opacity="0.35"/>`,
    );
  }
  for (const e of events.filter(
    (e): e is LifecycleEvent => e.type === 'process' && e.event === 'exited',
  )) {
    shapes.push(
      `<text x="${x(e.at)}" y="${laneOf(e.process) * 24 + 18}" fill="#d00" font-size="14">✖</text>`,
    );
  }
  const height = lanes.length * 24 + 30;
  for (const m of events.filter((e): e is MarkEvent => e.type === 'mark')) {
    shapes.push(
      `<line x1="${x(m.at)}" x2="${x(m.at)}" y1="0" y2="${height - 20}" stroke="#36c" stroke-dasharray="4 3"/><text x="${x(m.at) + 3}" y="${height - 6}" font-size="11" fill="#36c">${m.name}</text>`,
    );
  }
  const labels = lanes.map(
    (name, i) =>
      `<text x="4" y="${i * 24 + 17}" font-size="12">${escapeXml(name)}</text><line x1="${left}" x2="${width}" y1="${i * 24 + 22}" y2="${i * 24 + 22}" stroke="#eee"/>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${labels.join('')}${shapes.join('')}</svg>\n`;
}
