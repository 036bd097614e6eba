import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import type { ProcessorFaultSwitchName } from '@once/web/demo';
import { createHttpChaosSwitchboard } from '@once/web/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectConvergedInvariantHolds,
  ledgerChargesFor,
  waitForTerminal,
} from '../../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../../test-support/processor.ts';
import { seedCheckout, seedTenants } from '../../test-support/seed-checkouts.ts';

// Regression: the cockpit's processor switches ("charge, answer too late", "charge, then drop
// the connection", "charge, then answer 500") armed `POST /v1/payment_intents`, so they hit
// the create, which moves no money, and the presenter's scenes showed nothing happening to
// the charge. Armed here exactly as the cockpit arms them (the switchboard the web process
// uses), against the real processor and a real worker: each must hit the confirm
// (`POST /v1/payment_intents/:id/confirm`), and the payment must still be charged once.

let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;

const switchboard = () =>
  createHttpChaosSwitchboard({
    // Not used by processor faults: they go to the processor's admin API.
    controlUrl: 'http://127.0.0.1:9',
    secret: 'unused',
    processorUrl: processor.url,
    processorAdminToken: 'once-admin',
    armDropNextResponse: () => {},
  });

beforeAll(async () => {
  app = await createTestDatabase('worker_chaos_switches');
  await seedTenants(app.client.sql);
  processor = await startProcessorUnderTest('worker_chaos_switches_processor');
  worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
    'w-switches',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
});

/** The processor's log lines (timestamp first) about one payment's requests, by their keys. */
function requestLines(downstreamKey: string): string[] {
  return processor.output.filter((line) => line.includes(`key=${downstreamKey}`));
}

describe('processor fault switches hit the confirm, the call that moves the money', () => {
  // What follows the fault, as the audience sees it in the outbox and the timeline:
  // - fail_before_charge: the confirm is refused with a 500 before it runs (nothing stored, so
  //   the processor logs no answer for it); attempt 2 retrieves the intent (still
  //   `requires_confirmation`) and confirms it: the one run of that key.
  // - charge_then_drop: the SDK re-sends a confirm whose connection closed (its one built-in
  //   retry, even with maxNetworkRetries 0) with the same key: answered from the stored
  //   response (`Idempotent-Replayed`), inside attempt 1.
  // - delay / fail_after_charge: the charge committed, the answer came too late or as a 500;
  //   attempt 2 retrieves the recorded intent by id, sees `succeeded`, and sends nothing more.
  it.each<[ProcessorFaultSwitchName, string, { attempts: number; confirms: RegExp[] }]>([
    ['processor_fail_before_charge', 'fail_before_charge', { attempts: 2, confirms: [/ -> 200$/] }],
    [
      'processor_charge_then_drop',
      'charge_then_drop',
      { attempts: 1, confirms: [/ -> 200$/, / -> 200 \(replayed\)$/] },
    ],
    ['processor_delay', 'delay', { attempts: 2, confirms: [/ -> 200$/] }],
    ['processor_fail_after_charge', 'fail_after_charge', { attempts: 2, confirms: [/ -> 200$/] }],
  ])(
    '%s: the fault hits the confirm; charged once',
    async (name, kind, expected) => {
      const { sql } = app.client;
      const armed = await switchboard().armProcessorFault('acct_tenant_a', name);
      const checkout = await seedCheckout(sql);
      const statuses = await waitForTerminal(sql, [checkout.paymentId]);
      expect(statuses.get(checkout.paymentId)).toBe('succeeded');
      expect(await ledgerChargesFor(processor.sql, checkout.paymentId)).toBe(1);

      const lines = requestLines(checkout.downstreamKey);
      const faulted = lines.filter((line) => line.includes(` fault ${kind} on `));
      // Exactly one request took the fault, and it was the confirm (its key is the
      // downstream key's `:confirm`), never the create.
      expect(faulted).toHaveLength(1);
      expect(faulted[0]).toMatch(
        new RegExp(
          `on POST /v1/payment_intents/pi_\\w+/confirm acct_tenant_a key=${checkout.downstreamKey}:confirm$`,
        ),
      );
      // The create went through untouched, once.
      expect(
        lines.filter((line) => / POST \/v1\/payment_intents acct_tenant_a .* -> /.test(line)),
      ).toEqual([expect.stringMatching(/ -> 200$/)]);
      // Every confirm the processor answered, in order, all with the same key.
      expect(lines.filter((line) => /\/confirm acct_tenant_a .* -> /.test(line))).toEqual(
        expected.confirms.map((answer) => expect.stringMatching(answer)),
      );
      const [job] =
        await sql`select attempts from outbox_jobs where payment_id = ${checkout.paymentId}`;
      expect(job?.attempts).toBe(expected.attempts);
      // And the cockpit says which call it armed.
      expect(armed).toMatch(/next confirm/);
    },
    60_000,
  );

  it('the invariant holds over every payment above', async () => {
    await expectConvergedInvariantHolds(app.url, processor.database.url);
  });
});
