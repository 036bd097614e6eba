/**
 * `error` and each `cause` it wraps, outermost first (at most five): drizzle wraps the driver's
 * error (postgres.js, node-postgres) in "Failed query: ...", so its SQLSTATE `code` is often
 * one level down.
 */
export function causeChain(error: unknown): { code?: unknown; message?: unknown }[] {
  const chain: { code?: unknown; message?: unknown; cause?: unknown }[] = [];
  for (let e = error; typeof e === 'object' && e !== null && chain.length < 5; ) {
    chain.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return chain;
}
