// SQLSTATEs after which the same transaction can simply run again: the server went away
// (57P01 admin shutdown / pg_terminate_backend, 57P02 crash shutdown, 57P03 cannot connect
// now: starting up or shutting down), a conflict the server resolved by aborting us (40001
// serialization, 40P01 deadlock, 55P03 lock timeout), a cancelled statement (57014:
// statement_timeout while the server was struggling), a write refused by a read-only
// transaction (25006: the node was demoted to a standby under a connection opened while it
// was the primary; nothing was written, and a new connection finds the new primary).
const TRANSIENT_SQLSTATES = new Set([
  '25006',
  '57P01',
  '57P02',
  '57P03',
  '40001',
  '40P01',
  '55P03',
  '57014',
]);

/** Our own code for a transaction that neither finished nor failed in time (client-side watchdog). */
export const HUNG_QUERY_CODE = 'ONCE_CLIENT_TIMEOUT';

// postgres.js and Node socket errors that mean "the connection broke", not "the query is wrong".
const TRANSIENT_CLIENT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  // Only ever seen when a pool was replaced under a query (replaceable-pool.ts).
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  HUNG_QUERY_CODE,
]);

/**
 * The `code` of an error and of each `cause` it wraps, outermost first: SQLSTATEs (`'40001'`),
 * postgres.js and socket codes (`'CONNECTION_CLOSED'`). Drizzle wraps the driver's error in
 * "Failed query: ...", so the code is often one level down.
 *
 * @example
 * errorCodes(new Error('Failed query', { cause: { code: '55P03' } })); // ['55P03']
 */
export function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

/**
 * True when a database error is worth retrying: the connection or the server failed, or the
 * server aborted us to resolve a conflict. Syntax errors and constraint violations are not.
 * Follows `cause` (Drizzle wraps the driver's error in "Failed query: ...").
 *
 * @example
 * isTransientDatabaseError({ code: '57P01' }); // true: pg_terminate_backend or a restart
 */
export function isTransientDatabaseError(error: unknown): boolean {
  // Class 08: connection exceptions.
  return errorCodes(error).some(
    (code) =>
      TRANSIENT_SQLSTATES.has(code) || TRANSIENT_CLIENT_CODES.has(code) || /^08...$/.test(code),
  );
}

// The server aborted the transaction to keep it serializable (40001: CockroachDB and
// YugabyteDB under SERIALIZABLE, or PostgreSQL's SERIALIZABLE/REPEATABLE READ) or to break a
// deadlock (40P01). Both roll the WHOLE transaction back, so running it again from the start
// is always safe, unlike a lost connection, whose commit may or may not have happened.
const ROLLED_BACK_FOR_CONFLICT = new Set(['40001', '40P01']);

/**
 * True when the server rolled the transaction back to resolve a conflict (serialization
 * failure 40001, deadlock 40P01): nothing of it was committed and it may simply run again.
 * Follows `cause` (Drizzle wraps the driver's error).
 *
 * @example
 * isSerializationFailure({ code: '40001' }); // true
 * isSerializationFailure({ code: '57P01' }); // false: transient, but the commit may have happened
 */
export function isSerializationFailure(error: unknown): boolean {
  return errorCodes(error).some((code) => ROLLED_BACK_FOR_CONFLICT.has(code));
}
