import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readWebEnv } from './web-env.ts';

const base = {
  DATABASE_URL: 'postgres://x@127.0.0.1/once',
  SESSION_SECRET: 'web-env-test-session-secret',
};
const hex = () => randomBytes(32).toString('hex');

describe('readWebEnv: the key of stored answers', () => {
  it('unset outside production: answers stored in clear', () => {
    expect(readWebEnv(base).answerEncryption).toBeUndefined();
  });

  it('the current key and the retired ones, each by an id derived from it (a rotation moves a value)', () => {
    const [old, current] = [hex(), hex()];
    const before = readWebEnv({ ...base, ONCE_ANSWER_KEY: old }).answerEncryption;
    const after = readWebEnv({
      ...base,
      ONCE_ANSWER_KEY: current,
      ONCE_ANSWER_KEYS_RETIRED: ` ${old} `,
    }).answerEncryption;
    expect(Object.keys(after?.keys ?? {})).toHaveLength(2);
    expect(after?.keys[before?.currentKeyId ?? '']).toBe(old);
    expect(after?.currentKeyId).not.toBe(before?.currentKeyId);
    expect(after?.keys[after.currentKeyId]).toBe(current);
  });

  it('refuses a key that is not 64 hex characters, without repeating it', () => {
    expect(() => readWebEnv({ ...base, ONCE_ANSWER_KEY: 'short-secret' })).toThrow(
      /^ONCE_ANSWER_KEY and ONCE_ANSWER_KEYS_RETIRED hold 64 hex characters per key/,
    );
  });
});
