import { randomUUID } from 'node:crypto';

/**
 * A new capture or void id: `act_` and 32 hex digits.
 *
 * @example
 * newPaymentActionId(); // 'act_3f2b...'
 */
export function newPaymentActionId(): string {
  return `act_${randomUUID().replaceAll('-', '')}`;
}

/**
 * The downstream Idempotency-Key of an operator's capture or void: derived from the action's
 * own id (never from the payment's charge key), so every attempt of its job sends the same
 * and a second action could never replay the first one's answer.
 *
 * @example
 * actionDownstreamKeyFor('capture', 'act_1'); // 'once_capture_act_1'
 */
export function actionDownstreamKeyFor(kind: 'capture' | 'void', actionId: string): string {
  return `once_${kind}_${actionId}`;
}
