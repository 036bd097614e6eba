#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runBlackBox } from './black-box.ts';
import type { Preset } from './conformance.ts';
import { type LedgerReader, onceProcessorLedger, sqlLedger } from './ledger.ts';
import { junitReport, markdownReport } from './report.ts';

const USAGE = `usage: once-chaos --target <url> [--path /checkout] --seed N --duration 30s
                  --preset ietf|stripe [--concurrency 4]
                  [--downstream <processor url> --downstream-port <port the target's SDK calls>]
                  [--ledger <once processor /admin/ledger url> --ledger-key metadata.<field>]
                  [--ledger <postgres://...> --ledger-query "select ... as key from ..."]
                  [--report report.md] [--junit junit.xml]
The ledger's admin token is read from ONCE_CHAOS_LEDGER_TOKEN. Exit 0: no violation; 1: some; 2: usage.`;

/** `30s`, `2m`, `1500ms` or a number of seconds, in ms. */
function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!match) throw new Error(`--duration: cannot read ${JSON.stringify(text)}`);
  const unit = { ms: 1, s: 1_000, m: 60_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm'];
  return Number(match[1]) * unit;
}

function ledgerOf(values: Record<string, string | boolean | undefined>): LedgerReader | undefined {
  const text = (name: string) => (typeof values[name] === 'string' ? values[name] : undefined);
  const url = text('ledger');
  if (!url) return undefined;
  if (/^postgres(ql)?:/.test(url)) {
    const query = text('ledger-query');
    if (!query) throw new Error('--ledger postgres://... needs --ledger-query');
    return sqlLedger({ url, query });
  }
  return onceProcessorLedger({
    url,
    token: process.env.ONCE_CHAOS_LEDGER_TOKEN ?? '',
    keyField: text('ledger-key') ?? 'metadata.idempotency_key',
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string' },
      path: { type: 'string', default: '/checkout' },
      seed: { type: 'string', default: '1' },
      duration: { type: 'string', default: '30s' },
      preset: { type: 'string', default: 'ietf' },
      concurrency: { type: 'string', default: '4' },
      downstream: { type: 'string' },
      'downstream-port': { type: 'string' },
      ledger: { type: 'string' },
      'ledger-key': { type: 'string' },
      'ledger-query': { type: 'string' },
      report: { type: 'string' },
      junit: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (
    values.help ||
    !values.target ||
    !['ietf', 'stripe'].includes(values.preset) ||
    (values.downstream && !values['downstream-port'])
  ) {
    console.error(USAGE);
    return 2;
  }
  const result = await runBlackBox({
    target: values.target,
    path: values.path,
    seed: Number(values.seed),
    durationMs: parseDuration(values.duration),
    preset: values.preset as Preset,
    concurrency: Number(values.concurrency),
    ledger: ledgerOf(values),
    ...(values.downstream
      ? { downstream: { upstream: values.downstream, port: Number(values['downstream-port']) } }
      : {}),
  });
  const markdown = markdownReport(result);
  if (values.report) writeFileSync(values.report, markdown);
  if (values.junit) writeFileSync(values.junit, junitReport(result));
  console.log(markdown);
  return result.violations.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 2;
  },
);
