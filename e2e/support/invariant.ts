import { verifyInvariant } from '@once/invariant';
import type { RunningSystem } from '@once/scripts/start-system';
import { expect } from '@playwright/test';
import postgres from 'postgres';
import type { ShownCheckout } from './checkout-page.ts';

/**
 * Waits until the system converged (no payment `processing` or `unknown`), then checks
 * the exactly-once invariant (packages/invariant/README.md) FROM THE DATABASES, not the UI:
 * - `@once/invariant`'s `verifyInvariant` over every payment (at most one ledger charge,
 *   one payment per checkout key, app state equal to the ledger, nothing stuck);
 * - for each checkout the browser went through: exactly one app payment for its key, the
 *   payment the page watched, its status equal to what the page showed, and exactly one
 *   ledger charge if it succeeded, none otherwise.
 */
export async function expectInvariant(
  system: RunningSystem,
  shown: readonly ShownCheckout[],
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const app = postgres(system.databaseUrl, { max: 1, onnotice: () => {} });
  const processor = postgres(system.processorDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    await expect
      .poll(
        async () =>
          (
            await app`select count(*)::int as n from payments where status in ('processing', 'unknown')`
          )[0]!.n as number,
        { timeout: options.timeoutMs ?? 90_000, message: 'payments still processing/unknown' },
      )
      .toBe(0);

    const report = await verifyInvariant({
      databaseUrl: system.databaseUrl,
      processorDatabaseUrl: system.processorDatabaseUrl,
      converged: true,
      expectedCheckouts: shown.map((s) => ({
        tenantId: s.tenantId,
        idempotencyKey: s.idempotencyKey,
      })),
    });
    expect(report.violations, JSON.stringify(report.violations, null, 2)).toEqual([]);

    for (const checkout of shown) {
      expect(checkout.idempotencyKey, 'the page exposes the key it sent').not.toBe('');
      const payments = await app<{ id: string; status: string }[]>`
        select id, status from payments
        where tenant_id = ${checkout.tenantId} and idempotency_key = ${checkout.idempotencyKey}`;
      expect(payments, `payments for key ${checkout.idempotencyKey}`).toHaveLength(1);
      const payment = payments[0]!;
      expect(payment.id).toBe(checkout.paymentId);
      expect(payment.status, 'what the user was shown agrees with the database').toBe(
        checkout.state,
      );
      const [{ n: charges }] = (await processor`
        select count(*)::int as n from ledger_entries
        where kind = 'charge' and metadata->>'payment_id' = ${payment.id}
          and metadata->>'tenant_id' = ${checkout.tenantId}`) as unknown as [{ n: number }];
      expect(charges, `ledger charges for ${payment.id}`).toBe(
        payment.status === 'succeeded' ? 1 : 0,
      );
    }
  } finally {
    await Promise.all([app.end({ timeout: 5 }), processor.end({ timeout: 5 })]);
  }
}
