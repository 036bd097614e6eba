// SQLSTATEs after which the same transaction can run again: the server went away (57P0x), it
// aborted us for a conflict (40001, 40P01, 55P03) or a statement_timeout (57014), or a node
// demoted to standby refused the write (25006: nothing written; a new connection finds the primary).
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

/** The `code` of an error and of each `cause` it wraps (Drizzle wraps the driver's error). */
export function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

/** The connection or the server failed, or the server aborted us to resolve a conflict. */
export function isTransientDatabaseError(error: unknown): boolean {
  // Class 08: connection exceptions.
  return errorCodes(error).some(
    (code) =>
      TRANSIENT_SQLSTATES.has(code) || TRANSIENT_CLIENT_CODES.has(code) || /^08...$/.test(code),
  );
}

const ROLLED_BACK_FOR_CONFLICT = new Set(['40001', '40P01']);

/**
 * The server rolled the WHOLE transaction back (serialization failure, deadlock), so running
 * it again is always safe, unlike after a lost connection, whose commit may have happened.
 */
export function isSerializationFailure(error: unknown): boolean {
  return errorCodes(error).some((code) => ROLLED_BACK_FOR_CONFLICT.has(code));
}
