import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpChaosSwitchboard } from './http-chaos-switchboard.ts';

// What each processor switch asks the processor's admin API to arm: its fault on the one call
// it names, so a refund switch breaks the refund and never the charge.
let processor: Server;
const armed: Record<string, unknown>[] = [];

beforeAll(async () => {
  processor = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      armed.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(201, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => processor.listen(0, '127.0.0.1', resolve));
});

afterAll(() => new Promise<void>((resolve) => processor.close(() => resolve())));

const switchboard = () =>
  createHttpChaosSwitchboard({
    controlUrl: 'http://127.0.0.1:9',
    secret: 'unused',
    processorUrl: `http://127.0.0.1:${(processor.address() as AddressInfo).port}`,
    processorAdminToken: 'once-admin',
    armDropNextResponse: () => {},
  });

describe('a processor fault switch arms its fault on the call it names', () => {
  it.each([
    [
      'processor_charge_then_drop',
      { kind: 'charge_then_drop', operation: 'payment_intents.confirm' },
    ],
    [
      'processor_capture_then_drop',
      { kind: 'charge_then_drop', operation: 'payment_intents.capture' },
    ],
    ['processor_refund_then_drop', { kind: 'charge_then_drop', operation: 'refunds.create' }],
    ['processor_refund_fail_after', { kind: 'fail_after_charge', operation: 'refunds.create' }],
    ['processor_duplicate_webhook', { kind: 'duplicate_webhook', path_prefix: 'payment_intent.' }],
  ] as const)('%s', async (name, fault) => {
    armed.length = 0;
    const did = await switchboard().armProcessorFault('acct_a', name);
    expect(armed).toEqual([{ account: 'acct_a', count: 1, ...fault }]);
    expect(did).toMatch(/^armed on acct_a: the next /);
  });

  // Scene 3: the webhook settled the payment 1.5 s after Pay, before Kill could be pressed.
  it('processor_delay holds the charge’s answer, and its webhook longer still, so the payment stays processing', async () => {
    armed.length = 0;
    const did = await switchboard().armProcessorFault('acct_a', 'processor_delay');
    expect(armed).toEqual([
      {
        account: 'acct_a',
        count: 1,
        kind: 'delay',
        operation: 'payment_intents.confirm',
        delay_ms: 12_000,
        when: 'after_charge',
      },
      {
        account: 'acct_a',
        count: 1,
        kind: 'slow_webhook',
        path_prefix: 'payment_intent.',
        delay_ms: 15_000,
      },
    ]);
    expect(did).toMatch(/answer waits 12 s .*webhook 15 s late/);
  });

  it('says which call it broke in its own words', async () => {
    expect(await switchboard().armProcessorFault('acct_a', 'processor_refund_then_drop')).toBe(
      'armed on acct_a: the next refund (the call that gives money back): the refund is made, then the connection is dropped',
    );
  });
});
