/**
 * What a chaos run observed, in two logs:
 * - the clients' history (Jepsen's vocabulary): each operation is `invoke`d, then ends `ok`
 *   (a 2xx), `fail` (a definite refusal: any other status) or `info` (no answer: reset,
 *   dropped, timed out; the outcome is unknown);
 * - the proxy's attempts: every request it sent upstream and what the upstream answered,
 *   including answers it then dropped and copies it sent on its own.
 */
export type HistoryEvent =
  | { type: 'invoke'; process: number; key: string | null; attempt: number; at: number }
  | {
      type: 'ok' | 'fail';
      process: number;
      key: string | null;
      attempt: number;
      at: number;
      status: number;
    }
  | {
      type: 'info';
      process: number;
      key: string | null;
      attempt: number;
      at: number;
      error: string;
    };

/** One request the proxy sent upstream, and its answer (`status: null`: none came). */
export interface UpstreamAttempt {
  key: string | null;
  /** SHA-256 of the request body: two attempts with one key and two digests reuse the key. */
  bodyDigest: string;
  /** Why it was sent: the client's request, or a copy the proxy made. */
  origin: 'client' | 'duplicate_at_once' | 'duplicate_late';
  startedAt: number;
  endedAt: number;
  status: number | null;
  contentType: string | null;
  replayed: boolean;
  body: string;
  /** Whether the client was given this answer (false when the proxy dropped it). */
  delivered: boolean;
}
