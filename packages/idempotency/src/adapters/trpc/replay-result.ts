/**
 * tRPC v11 has no public API for a middleware that answers without calling `next()`
 * (trpc/trpc#4066). A middleware result is `{ ok: true, data, marker }`, where `marker` is the
 * internal `'middlewareMarker'` brand. This is the ONE place that fabricates it; the plugin's
 * replay test fails if tRPC changes the shape.
 */
export function replayMiddlewareResult<TResult>(data: unknown): TResult {
  return { ok: true, data, marker: 'middlewareMarker' } as unknown as TResult;
}
