import type { StoredResponse } from './types.ts';

/**
 * What a phase returns (leased mode): either "commit and continue at this recovery point" or
 * "commit and finish with this response" (Brandur Leach's atomic phases).
 */
export type PhaseResult =
  | { kind: 'advance'; recoveryPoint: string; data: unknown }
  | { kind: 'respond'; response: StoredResponse };

/**
 * Phase result: commit this phase's writes and continue at `recoveryPoint`. `data` (JSON) is
 * stored with the key and handed to the next phase as `exec.recoveryData`, also after a crash.
 */
export function advanceTo(recoveryPoint: string, data: unknown = null): PhaseResult {
  return { kind: 'advance', recoveryPoint, data };
}

/** Phase result: commit this phase's writes together with the final response. */
export function respond(response: StoredResponse): PhaseResult {
  return { kind: 'respond', response };
}
