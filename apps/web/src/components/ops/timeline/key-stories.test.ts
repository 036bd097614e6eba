import { describe, expect, it } from 'vitest';
import { keyStoriesOf } from './key-stories.ts';

const at = '2026-01-01T00:00:00.000Z';

describe('keyStoriesOf', () => {
  it('groups pay and operator attempts by key, each request with how it was answered', () => {
    const stories = keyStoriesOf([
      { seq: 1, at, actor: 'browser', kind: 'pay.attempt', detail: { key: 'p', replayed: false } },
      { seq: 2, at, actor: 'web', kind: 'payment.committed', detail: { job: 'j' } },
      { seq: 3, at, actor: 'browser', kind: 'pay.attempt', detail: { key: 'p', replayed: true } },
      {
        seq: 6,
        at,
        actor: 'api_client',
        kind: 'pay.attempt',
        detail: { key: 'p', replayed: false, answer: 'idempotency_key_reused' },
      },
      {
        seq: 4,
        at,
        actor: 'operator',
        kind: 'operator.attempt',
        detail: { key: 'r', operation: 'ops.refundPayment', answer: 'executed' },
      },
      {
        seq: 5,
        at,
        actor: 'operator',
        kind: 'operator.attempt',
        detail: { key: 'r', operation: 'ops.refundPayment', answer: 'idempotency_key_in_use' },
      },
    ]);
    expect(stories).toEqual([
      {
        key: 'p',
        action: 'pay',
        requests: [
          { seq: 1, at, answer: 'executed' },
          { seq: 3, at, answer: 'replayed' },
          { seq: 6, at, answer: 'idempotency_key_reused' },
        ],
      },
      {
        key: 'r',
        action: 'refund',
        requests: [
          { seq: 4, at, answer: 'executed' },
          { seq: 5, at, answer: 'idempotency_key_in_use' },
        ],
      },
    ]);
  });

  it('tells a replay after the execution it replays, even when it was written first', () => {
    const attempt = (seq: number, answer: string) => ({
      seq,
      at,
      actor: 'operator' as const,
      kind: 'operator.attempt',
      detail: { key: 'c', operation: 'ops.capturePayment', answer },
    });
    const [story] = keyStoriesOf([
      attempt(1, 'idempotency_key_in_use'),
      attempt(2, 'replayed'),
      attempt(3, 'executed'),
      attempt(4, 'replayed'),
    ]);
    expect(story!.requests.map((r) => `${r.seq} ${r.answer}`)).toEqual([
      '1 idempotency_key_in_use',
      '3 executed',
      '2 replayed',
      '4 replayed',
    ]);
  });
});
