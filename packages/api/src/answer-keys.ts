import { createHash } from 'node:crypto';
import type { AnswerEncryption } from '@once/idempotency/drizzle';

/**
 * The keys stored idempotent answers are sealed with, from `ONCE_ANSWER_KEY` (the current key)
 * and `ONCE_ANSWER_KEYS_RETIRED` (earlier ones, comma-separated, still readable): 64 hex
 * characters each. A key's id is a prefix of its SHA-256, so rotating is moving a value. Every
 * process that reads the key rows (the web, the worker's webhook backfill) reads them alike.
 * Unset: answers are stored in clear, refused with NODE_ENV=production.
 */
export function readAnswerEncryption(
  env: Record<string, string | undefined>,
): AnswerEncryption | undefined {
  const current = env.ONCE_ANSWER_KEY?.trim();
  if (!current) {
    if (env.NODE_ENV !== 'production') return undefined;
    throw new Error(
      'ONCE_ANSWER_KEY is not set: stored answers hold customer data and are encrypted in production; generate one with `openssl rand -hex 32`',
    );
  }
  const keys = [current, ...(env.ONCE_ANSWER_KEYS_RETIRED ?? '').split(',')]
    .map((key) => key.trim())
    .filter(Boolean);
  if (!keys.every((key) => /^[0-9a-f]{64}$/i.test(key)))
    throw new Error(
      'ONCE_ANSWER_KEY and ONCE_ANSWER_KEYS_RETIRED hold 64 hex characters per key (`openssl rand -hex 32`)',
    );
  const idOf = (key: string) =>
    createHash('sha256').update(key.toLowerCase()).digest('hex').slice(0, 8);
  return {
    currentKeyId: idOf(current),
    keys: Object.fromEntries(keys.map((key) => [idOf(key), key])),
  };
}
