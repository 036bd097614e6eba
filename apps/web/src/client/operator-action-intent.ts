import type { AttemptOutcome, KeyValueStorage } from '@once/idempotency/client';

/** The cockpit's idempotent buttons: money, and a webhook event's resend. */
export type OperatorActionKind = 'capture' | 'void' | 'refund' | 'resend';

/** One intended action: its key, minted once, and the input it was meant with. */
export interface OperatorActionIntent<TInput> {
  key: string;
  input: TInput;
}

/**
 * Where a payment's intended action waits until its answer is final: one per payment and button,
 * shared by every tab, so a reload, a second click or another tab sends the SAME key.
 */
export function intentStorageKey(paymentId: string, kind: OperatorActionKind): string {
  return `once.ops.action.${paymentId}.${kind}`;
}

/** The stored intent of this button, if any tab left one unanswered. */
export function readIntent<TInput>(
  storage: KeyValueStorage | undefined,
  storageKey: string,
): OperatorActionIntent<TInput> | undefined {
  try {
    const raw = storage?.getItem(storageKey);
    return raw ? (JSON.parse(raw) as OperatorActionIntent<TInput>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a press sends: the intent some tab stored and no final answer cleared (its key and ITS
 * input), else `input` under a new key, stored for the other tabs before it is sent.
 */
export function claimIntent<TInput>(
  storage: KeyValueStorage | undefined,
  storageKey: string,
  input: TInput,
  mintKey: () => string,
): OperatorActionIntent<TInput> {
  const stored = readIntent<TInput>(storage, storageKey);
  if (stored) return stored;
  const fresh = { key: mintKey(), input };
  try {
    storage?.setItem(storageKey, JSON.stringify(fresh));
  } catch {
    // Storage full or disabled: the intent lives on in this page's memory only.
  }
  return fresh;
}

/**
 * Forgets the stored intent once `answeredKey`'s answer is final, and only if it is still the
 * stored one: a tab hearing an old answer late never drops another tab's newer intent.
 */
export function forgetIntent(
  storage: KeyValueStorage | undefined,
  storageKey: string,
  answeredKey: string,
): void {
  if (readIntent(storage, storageKey)?.key !== answeredKey) return;
  try {
    storage?.removeItem(storageKey);
  } catch {
    // Disabled storage holds nothing to forget.
  }
}

/**
 * What a money button shows: `sending` (a request is out), `accepted` (the server wrote the
 * action; the worker and the processor are on it), `no_answer` (the answer was lost: retrying
 * sends the same key), `refused` (final: nothing moved, with why).
 */
export type OperatorActionState<TResult> =
  | { phase: 'idle' }
  | { phase: 'sending'; key: string }
  | { phase: 'accepted'; key: string; result: TResult; replayed: boolean }
  | { phase: 'no_answer'; key: string; why: string; retryInSeconds?: number }
  | { phase: 'refused'; key: string; code: string; why: string };

/** The operator's words for a refusal, from its stable code (never the server's text). */
const REFUSALS: Record<string, string> = {
  payment_not_authorized:
    'the payment is not authorised, or a capture or void is already under way',
  payment_not_refundable: 'only a succeeded or captured payment can be refunded',
  refund_amount_too_large: 'the amount is more than is left to refund',
  capture_amount_too_large: 'the amount is more than was authorised',
  webhook_event_not_found: 'the processor has no such event for this merchant',
  key_reused: 'this key was already used for a different request',
  unauthenticated: 'you are not signed in as an operator',
};

/** The state an answer leaves a button in; only `accepted` and `refused` are final. */
export function stateOfAnswer<TResult>(
  key: string,
  answer: AttemptOutcome<TResult>,
): OperatorActionState<TResult> {
  switch (answer.kind) {
    case 'accepted':
      return { phase: 'accepted', key, result: answer.result, replayed: answer.replayed };
    case 'rejected':
    case 'key_reused':
    case 'unauthenticated': {
      const code = answer.kind === 'rejected' ? answer.code : answer.kind;
      return { phase: 'refused', key, code, why: REFUSALS[code] ?? code };
    }
    case 'in_use':
    case 'outcome_unknown':
      return {
        phase: 'no_answer',
        key,
        why: 'the first request with this key is still running',
        retryInSeconds: answer.retryAfterSeconds,
      };
    default:
      return {
        phase: 'no_answer',
        key,
        why: 'detail' in answer ? answer.detail : 'the server could not answer now',
      };
  }
}

/** Whether a state is the answer's last word (the stored intent may go). */
export function isFinal(state: OperatorActionState<unknown>): boolean {
  return state.phase === 'accepted' || state.phase === 'refused';
}
