'use client';

import { useTRPCClient } from '../../../client/trpc-react.tsx';
import { useOperatorAction } from '../../../client/use-operator-action.ts';
import { ActionAnswer } from '../money/action-answer.tsx';
import { lastAnswerOf } from './delivery-state.ts';
import styles from './resend-button.module.css';

/**
 * Sends one event again (same event id, so the app applies it once). Idempotent on its own like
 * the money buttons (`useOperatorAction`, one intent per event): a double click or a reload
 * resends once. The answer is the endpoint's, at once.
 */
export function ResendButton({ eventId, type }: { eventId: string; type: string }) {
  const client = useTRPCClient();
  const resend = useOperatorAction(eventId, 'resend', (input: { eventId: string }, context) =>
    client.ops.resendWebhook.mutate(input, { context }),
  );
  const { state } = resend;
  const done =
    state.phase === 'accepted'
      ? {
          ok: state.result.delivered,
          text: `the endpoint answered ${lastAnswerOf({ lastStatus: state.result.status, lastError: state.result.error })}`,
        }
      : undefined;
  return (
    <div className={styles.resend}>
      <button
        type="button"
        onClick={() => resend.press({ eventId })}
        disabled={state.phase === 'sending'}
        aria-label={`Resend ${type} ${eventId}`}
      >
        Resend
      </button>
      <ActionAnswer state={state} done={done} testId={`resend-answer-${eventId}`} />
    </div>
  );
}
