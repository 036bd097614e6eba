/**
 * `precheck: 'adaptive'` (atomic and leased mode): whether to read the key before running the
 * handler, decided from what recent requests of the same operation found.
 *
 * The read decides nothing (the key's primary key inside the handler's transaction does): it
 * spares a request whose key is taken a transaction that will roll back, and costs a first
 * request a round trip. The advisor reads while more than one in 32 recent requests (per
 * process and operation, exponentially weighted) found their key taken: two retries in a row
 * bring the read back, as after a process starts or in a retry storm. "Taken" is observed in
 * both states (the read found the key, or the insert conflicted or gave up waiting), so the
 * estimate never goes blind. A wrong guess costs time, never a second effect.
 */

/** Whether a request reads its key first, and where it reports what it found. */
export interface PrecheckPlan {
  readonly readFirst: boolean;
  readonly record: (keyWasTaken: boolean) => void;
}

const ignore = () => {};
const ALWAYS_READ: PrecheckPlan = { readFirst: true, record: ignore };
const NEVER_READ: PrecheckPlan = { readFirst: false, record: ignore };

/** Weight of the newest request in the share (1/32: the last ~32 requests matter). */
export const PRECHECK_SMOOTHING = 1 / 32;
/** Read while more than this share of recent requests found their key taken. */
export const PRECHECK_READ_ABOVE = 1 / 32;
/**
 * The share an operation starts from: reading. A process that just started is when retries
 * cluster (its predecessor's cut-off requests); 22 first requests in a row bring it below
 * the threshold.
 */
const INITIAL_SHARE = 2 * PRECHECK_READ_ABOVE;
/** Operation names come from configuration, but a bound keeps a misuse from growing the map. */
export const PRECHECK_MAX_OPERATIONS = 1_000;

/** One engine's advisor: a share of recent requests that found their key taken, per operation. */
export function createPrecheckAdvisor() {
  const shares = new Map<string, number>();
  // Operations past the bound share one estimate.
  const OVERFLOW = '\u0000overflow';

  function slot(operation: string): string {
    return shares.has(operation) || shares.size < PRECHECK_MAX_OPERATIONS ? operation : OVERFLOW;
  }

  const advisor = {
    /** Read the key before the handler for the next request of `operation`? */
    shouldRead(operation: string): boolean {
      return (shares.get(slot(operation)) ?? INITIAL_SHARE) > PRECHECK_READ_ABOVE;
    },
    /** What a finished request of `operation` found: its key already taken, or not. */
    record(operation: string, keyWasTaken: boolean): void {
      const name = slot(operation);
      const share = shares.get(name) ?? INITIAL_SHARE;
      shares.set(name, share + ((keyWasTaken ? 1 : 0) - share) * PRECHECK_SMOOTHING);
    },
    /** One request's plan under its policy's `precheck` (`record` is a no-op unless adaptive). */
    planFor(operation: string, precheck: boolean | 'adaptive'): PrecheckPlan {
      if (precheck !== 'adaptive') return precheck ? ALWAYS_READ : NEVER_READ;
      return {
        readFirst: advisor.shouldRead(operation),
        record: (keyWasTaken: boolean) => advisor.record(operation, keyWasTaken),
      };
    },
  };
  return advisor;
}
