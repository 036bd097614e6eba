import { sql } from 'drizzle-orm';
import type { ClaimResumableInput, KeyIdentity, KeyRecord } from '../../core/types.ts';
import type { AnswerCodec } from './answer-codec.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { type KeyRecordRow, keyRecordColumns, toKeyRecord } from './key-record-sql.ts';
import { ACQUIRED_VIA, leftForResume } from './key-state-machine.ts';
import { preparedStatement } from './prepared-statement.ts';

const p = sql.placeholder;

/**
 * The completer's takeover, ONE statement: the oldest expired lease of the operation that
 * `leftForResume` selects gets a new owner token and lease, as a retry's takeover would (the
 * recovery point, its data and the fingerprint stay). `skip locked` passes over a row a
 * racing retry or completer is taking, and the re-check of the row it locks refuses one that
 * was taken over since this statement's snapshot.
 */
const claimStatement = preparedStatement<KeyRecordRow & KeyIdentity>(
  'once_idempotency_claim_resumable',
  sql`
    with next as (
      select e.tenant_id, e.operation, e.key from idempotency_keys e
      where e.operation = ${p('operation')} and ${leftForResume('e', p('graceMs'))}
      order by e.locked_until
      limit 1
      for update skip locked)
    update idempotency_keys k set owner_token = ${p('ownerToken')},
      locked_until = now() + ${msInterval(p('leaseMs'))}, acquired_via = ${ACQUIRED_VIA.expiredLease},
      attempts = k.attempts + 1, updated_at = now()
    from next e
    where k.tenant_id = e.tenant_id and k.operation = e.operation and k.key = e.key
    returning k.tenant_id as "tenantId", k.operation, k.key, ${keyRecordColumns('k')}`,
);

/** `IdempotencyStore.claimResumable` on Postgres. */
export async function claimResumable(
  db: AnyPgDatabase,
  input: ClaimResumableInput,
  codec: AnswerCodec,
): Promise<{ id: KeyIdentity; record: KeyRecord } | undefined> {
  const [row] = await claimStatement(db, { ...input });
  if (!row) return undefined;
  const id = { tenantId: row.tenantId, operation: row.operation, key: row.key };
  // A held key has no answer to open.
  return { id, record: toKeyRecord(row, id, codec, false) };
}
