import { type MoneyActionKind, moneyActionKeys, payments } from '@once/db/schema';
import { IdempotencyError } from '@once/idempotency';
import { and, eq } from 'drizzle-orm';
import type { Transaction } from '../database.ts';

/**
 * Binds the caller's Idempotency-Key to one money action (its kind and payment) for ever, inside
 * the action's transaction: one operation per (tenant, key) on every transport. The key store
 * scopes its rows by operation (REST, GraphQL and the cockpit each have their own), so it
 * cannot see a key used on another transport or for another action; this row can. Two
 * requests under one key that race (on two transports, for two payments) meet at its primary
 * key: the second waits for the first's commit, then reads its binding. A key bound to
 * another action, or one that paid a checkout, is refused (`idempotency_key_reused`, 422),
 * as Stripe refuses a key reused on another endpoint; the same action under its key goes on
 * (the caller then finds its action and answers it as it is now). A checkout refuses a key a
 * money action holds (`refuseMoneyActionKey`).
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
