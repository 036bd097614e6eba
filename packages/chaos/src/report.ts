import type { ChaosRunResult } from './run-chaos.ts';
import { VIOLATIONS, type ViolationName } from './violations.ts';

/**
 * The run as Markdown for a CI summary: what was sent, the faults, violations by name.
 *
 * @example
 * writeFileSync('report.md', markdownReport(result));
 */
export function markdownReport(result: ChaosRunResult): string {
  const byName = groupByName(result);
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
    '## Violations',
    '',
  ];
  if (byName.size === 0) lines.push('None.');
  for (const [name, found] of byName) {
    lines.push(`### ${name} (${found.length})`, '', VIOLATIONS[name], '');
    for (const violation of found.slice(0, 5)) {
      lines.push(`- key \`${violation.key ?? '(none)'}\`: ${violation.detail}`);
    }
    if (found.length > 5) lines.push(`- and ${found.length - 5} more`);
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The run as JUnit XML: one test case per rule checked, failed when it was violated.
 *
 * @example
 * writeFileSync('junit.xml', junitReport(result));
 */
export function junitReport(result: ChaosRunResult): string {
  const byName = groupByName(result);
  const cases = checkedRules(result).map((name) => {
    const found = byName.get(name) ?? [];
    const failure =
      found.length === 0
        ? ''
        : `\n      <failure message="${escapeXml(`${found.length} violation(s): ${VIOLATIONS[name]}`)}">${escapeXml(
            found.map((v) => `${v.key ?? '(none)'}: ${v.detail}`).join('\n'),
          )}</failure>\n    `;
    return `    <testcase classname="once-chaos.${result.preset}" name="${name}">${failure}</testcase>`;
  });
  const failures = checkedRules(result).filter((name) => byName.has(name)).length;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites tests="${cases.length}" failures="${failures}">`,
    `  <testsuite name="once-chaos seed ${result.seed}" tests="${cases.length}" failures="${failures}" time="${result.durationMs / 1000}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

function checkedRules(result: ChaosRunResult): ViolationName[] {
  const rules: ViolationName[] = ['response_not_replayed'];
  if (result.preset === 'stripe') rules.push('replay_not_marked');
  if (result.preset === 'ietf') {
    rules.push(
      'missing_key_not_rejected',
      'reused_key_not_rejected',
      'in_flight_not_rejected',
      'error_not_problem_json',
    );
  }
  if (result.charges !== null) rules.push('double_charge');
  return rules;
}

function groupByName(result: ChaosRunResult) {
  const byName = new Map<ViolationName, ChaosRunResult['violations']>();
  for (const violation of result.violations) {
    byName.set(violation.name, [...(byName.get(violation.name) ?? []), violation]);
  }
  return byName;
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&"]/g,
    (char) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[char]!,
  );
}
