import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readAnswerEncryption } from './answer-keys.ts';

const hex = () => randomBytes(32).toString('hex');

describe('readAnswerEncryption: the keys of stored answers', () => {
  it('unset: in clear outside production, a start refused in production', () => {
    expect(readAnswerEncryption({})).toBeUndefined();
    expect(() => readAnswerEncryption({ NODE_ENV: 'production' })).toThrow(
      /^ONCE_ANSWER_KEY is not set: .*`openssl rand -hex 32`$/,
    );
  });

  it('the current key and the retired ones, each by an id derived from it (a rotation moves a value)', () => {
    const [old, current] = [hex(), hex()];
    const before = readAnswerEncryption({ ONCE_ANSWER_KEY: old });
    const after = readAnswerEncryption({
      ONCE_ANSWER_KEY: current,
      ONCE_ANSWER_KEYS_RETIRED: ` ${old} `,
    });
    expect(Object.keys(after?.keys ?? {})).toHaveLength(2);
    expect(after?.keys[before?.currentKeyId ?? '']).toBe(old);
    expect(after?.currentKeyId).not.toBe(before?.currentKeyId);
    expect(after?.keys[after.currentKeyId]).toBe(current);
  });

  it('refuses a key that is not 64 hex characters, without repeating it', () => {
    const refusal = () => readAnswerEncryption({ ONCE_ANSWER_KEY: 'short-secret' });
    expect(refusal).toThrow(/^ONCE_ANSWER_KEY and ONCE_ANSWER_KEYS_RETIRED hold 64 hex characters/);
    expect(refusal).not.toThrow(/short-secret/);
  });
});
