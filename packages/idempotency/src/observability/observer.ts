import type { IdempotencyEvent } from '../core/types.ts';

/**
 * What the observers return: an `onEvent` itself, to pass wherever one is taken (the engine,
 * `startKeyMaintenance`, the reaper, the sweeper, the key operator), and the same function as
 * `.onEvent` for code written against the older shape.
 */
export type IdempotencyObserver = ((event: IdempotencyEvent) => void) & {
  onEvent: (event: IdempotencyEvent) => void;
};

/** `onEvent` as an {@link IdempotencyObserver}. */
export function observerOf(onEvent: (event: IdempotencyEvent) => void): IdempotencyObserver {
  return Object.assign(onEvent, { onEvent });
}
