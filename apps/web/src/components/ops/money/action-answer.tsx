import type { OperatorActionState } from '../../../client/operator-action-intent.ts';
import styles from './money.module.css';

/**
 * What a money button's last request came to, in words: sending, accepted and waiting for the
 * processor, done (the processor's outcome is in), refused (why), or no answer yet (retrying
 * sends the same key). `done` is read from the payment, not from the answer.
 */
export function ActionAnswer({
  state,
  done,
  testId,
}: {
  state: OperatorActionState<unknown>;
  done: { ok: boolean; text: string } | undefined;
  testId: string;
}) {
  const { text, tone } = wordsOf(state, done);
  return (
    <p
      className={`${styles.answer} ${tone ? styles[tone] : ''}`}
      aria-live="polite"
      data-testid={testId}
      data-phase={done ? 'done' : state.phase}
    >
      {text}
    </p>
  );
}

function wordsOf(
  state: OperatorActionState<unknown>,
  done: { ok: boolean; text: string } | undefined,
): { text: string; tone?: 'ok' | 'warn' | 'bad' } {
  switch (state.phase) {
    case 'idle':
      return { text: '' };
    case 'sending':
      return { text: 'Sending…' };
    case 'accepted':
      if (done) return { text: `Done: ${done.text}.`, tone: done.ok ? 'ok' : 'bad' };
      return {
        text: `Accepted${state.replayed ? ' (replayed: the server had this request already)' : ''}, waiting for the processor…`,
        tone: 'warn',
      };
    case 'no_answer':
      return {
        text: `No answer yet: ${state.why}. ${state.retryInSeconds !== undefined ? 'Asking again with the same key…' : 'Press again to retry with the same key.'}`,
        tone: 'warn',
      };
    case 'refused':
      return { text: `Refused: ${state.why}. Nothing moved.`, tone: 'bad' };
  }
}
