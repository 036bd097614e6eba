import { type MoneyActionKind, moneyActionKeys, payments } from '@once/db/schema';
import { IdempotencyError } from '@once/idempotency';
import { and, eq } from 'drizzle-orm';
import type { Transaction } from '../database.ts';

/**
 * Binds the caller's Idempotency-Key to one money action (kind and payment) for ever, inside the
 * action's transaction: the key store scopes rows by operation, so only this row sees a key
 * used on another transport or for another action. Racing requests meet at its primary key
 * (the second waits for the first's commit). A key bound elsewhere, or one that paid a
 * checkout, is `idempotency_key_reused` (422), as Stripe refuses a key on another endpoint.
 */
export async function bindMoneyActionKey(
  tx: Transaction,
  binding: { tenantId: string; key: string; kind: MoneyActionKind; paymentId: string },
): Promise<void> {
  const bound = await tx
    .insert(moneyActionKeys)
    .values(binding)
    .onConflictDoNothing()
    .returning({ kind: moneyActionKeys.kind });
  if (bound.length === 0) {
    // A new statement, so a new snapshot: it sees the binding the conflict waited for.
    const [held] = await tx
      .select({ kind: moneyActionKeys.kind, paymentId: moneyActionKeys.paymentId })
      .from(moneyActionKeys)
      .where(
        and(eq(moneyActionKeys.tenantId, binding.tenantId), eq(moneyActionKeys.key, binding.key)),
      );
    if (held?.kind !== binding.kind || held.paymentId !== binding.paymentId) {
      throw new IdempotencyError('idempotency_key_reused');
    }
    return;
  }
  const [paid] = await tx
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.tenantId, binding.tenantId), eq(payments.idempotencyKey, binding.key)))
    .limit(1);
  if (paid) throw new IdempotencyError('idempotency_key_reused');
}

/**
 * Refuses a new checkout under a key that already made a money action
 * (`idempotency_key_reused`): a key is one operation per tenant, payments included. A pay and a
 * money action racing under one key are not serialised here (each may miss the other's
 * uncommitted row); each still moves only its own money.
 */
export async function refuseMoneyActionKey(
  tx: Transaction,
  tenantId: string,
  key: string,
): Promise<void> {
  const [held] = await tx
    .select({ kind: moneyActionKeys.kind })
    .from(moneyActionKeys)
    .where(and(eq(moneyActionKeys.tenantId, tenantId), eq(moneyActionKeys.key, key)));
  if (held) throw new IdempotencyError('idempotency_key_reused');
}
