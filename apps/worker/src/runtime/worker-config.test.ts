import { readAnswerEncryption } from '@once/api';
import { describe, expect, it } from 'vitest';
import { readWorkerConfig } from './worker-config.ts';

const base = { DATABASE_URL: 'postgres://x@127.0.0.1/app' };

describe('readWorkerConfig', () => {
  it('has the documented reconcile defaults', () => {
    expect(readWorkerConfig(base)).toMatchObject({
      reconcileAfterMs: 60_000,
      reconcileBackoffBaseMs: 60_000,
      reconcileBackoffMaxMs: 3_600_000,
      reconcileStuckAfterChecks: 5,
    });
  });

  it('sends 3-D Secure shoppers back to the return page under WEB_PUBLIC_URL (the web app on its default port unless set)', () => {
    expect(readWorkerConfig(base)).toMatchObject({
      checkoutReturnUrl: 'http://127.0.0.1:3000/checkout/return',
      challengeAbandonAfterMs: 15 * 60_000,
    });
    expect(
      readWorkerConfig({ ...base, WEB_PUBLIC_URL: 'https://shop.example/store/' })
        .checkoutReturnUrl,
    ).toBe('https://shop.example/store/checkout/return');
  });

  it('refuses a WEB_PUBLIC_URL the processor would refuse as a return_url, naming it', () => {
    for (const bad of ['shop.example', 'javascript:alert(1)', 'https://shop.example/?a=1']) {
      expect(() => readWorkerConfig({ ...base, WEB_PUBLIC_URL: bad })).toThrow(/WEB_PUBLIC_URL/);
    }
  });

  it("reads the web's answer keys, the same ids as the web's (its webhook records share their rows)", () => {
    const key = 'ab'.repeat(32);
    expect(readWorkerConfig({ ...base, ONCE_ANSWER_KEY: key }).answerEncryption).toEqual(
      readAnswerEncryption({ ONCE_ANSWER_KEY: key }),
    );
    expect(readWorkerConfig(base).answerEncryption).toBeUndefined();
  });

  it('behind a transaction pooler, takes migrations and LISTEN to the direct URL, refused without one', () => {
    const pooled = { ...base, DATABASE_POOL_MODE: 'transaction' };
    const direct = 'postgres://x@127.0.0.1:5432/app';
    expect(readWorkerConfig({ ...pooled, DATABASE_DIRECT_URL: direct })).toMatchObject({
      databaseUrl: base.DATABASE_URL,
      databasePoolMode: 'transaction',
      databaseDirectUrl: direct,
    });
    expect(() => readWorkerConfig(pooled)).toThrow(
      /^DATABASE_DIRECT_URL is not set: with DATABASE_POOL_MODE=transaction, migrations and the outbox LISTEN need/,
    );
    expect(() => readWorkerConfig({ ...pooled, ONCE_OUTBOX_NOTIFY: '0' })).toThrow(
      /^DATABASE_DIRECT_URL is not set: with DATABASE_POOL_MODE=transaction, migrations need/,
    );
  });

  it('refuses a backoff whose base exceeds its cap, naming both variables', () => {
    expect(() =>
      readWorkerConfig({ ...base, WORKER_BACKOFF_BASE_MS: '60000', WORKER_BACKOFF_MAX_MS: '1000' }),
    ).toThrow(/WORKER_BACKOFF_BASE_MS \(60000\) must not exceed WORKER_BACKOFF_MAX_MS \(1000\)/);
    expect(() =>
      readWorkerConfig({
        ...base,
        WORKER_RECONCILE_BACKOFF_BASE_MS: '5000',
        WORKER_RECONCILE_BACKOFF_MAX_MS: '10',
      }),
    ).toThrow(/WORKER_RECONCILE_BACKOFF_BASE_MS/);
  });
});
