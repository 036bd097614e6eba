import { sql } from 'drizzle-orm';
import { identity, type KeyIdentity, type StoredResponse } from '../../core/types.ts';
import { type AnswerEncryption, answerCodec } from './answer-codec.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { RESPONSE_BODY } from './key-record-sql.ts';
import { isKey, isUnknown, START_OVER, STATE } from './key-state-machine.ts';
import { preparedStatement } from './prepared-statement.ts';

const DAY_MS = 86_400_000;
const p = sql.placeholder;

/** `unknown` -> `completed`: the side effect happened; replay this response from now on. */
const resolveCompletedStatement = preparedStatement(
  'once_idempotency_resolve_completed',
  sql`update idempotency_keys k set state = ${STATE.completed}, response_status = ${p('status')},
      response_headers = ${p('headers')}::jsonb, response_body = ${p('body')},
      response_key_id = ${p('bodyKeyId')}, completed_at = now(), updated_at = now(), expires_at = now() + ${msInterval(p('ttlMs'))}
    where ${isKey('k')} and ${isUnknown('k')} returning 1`,
);

/** `unknown` -> `released`: nothing happened; the key may run again from the start. */
const resolveReleasedStatement = preparedStatement(
  'once_idempotency_resolve_released',
  sql`update idempotency_keys k set state = ${STATE.released}, ${START_OVER}, updated_at = now()
    where ${isKey('k')} and ${isUnknown('k')} returning 1`,
);

/**
 * Reconciliation's exit from `unknown`: once the real outcome is known (for example from the
 * processor's ledger), either store the response to replay (`completed`) or let the key run
 * again (`released`). Returns false if the key was not `unknown`. Pass the store's
 * `encryption` so the response is stored as the store stores answers.
 */
export async function resolveUnknownKey(
  db: AnyPgDatabase,
  id: KeyIdentity,
  resolution:
    | { outcome: 'completed'; response: StoredResponse; ttlMs?: number }
    | { outcome: 'released' },
  options: { encryption?: AnswerEncryption } = {},
): Promise<boolean> {
  const key = identity(id);
  if (resolution.outcome === 'released')
    return (await resolveReleasedStatement(db, key)).length > 0;
  const body = answerCodec(options.encryption).seal(key, RESPONSE_BODY, resolution.response.body);
  const rows = await resolveCompletedStatement(db, {
    ...key,
    status: resolution.response.status,
    headers: JSON.stringify(resolution.response.headers),
    body: body.text,
    bodyKeyId: body.keyId,
    ttlMs: resolution.ttlMs ?? DAY_MS,
  });
  return rows.length > 0;
}
