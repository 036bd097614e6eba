import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { IdempotencyError } from '../../core/errors.ts';
import type { KeyIdentity } from '../../core/types.ts';

/**
 * Encryption at rest of what the store keeps for a key (`createDrizzleStore(db, { encryption })`):
 * AES-256-GCM, a random 96-bit IV per value, the key's id stored with the row.
 */
export interface AnswerEncryption {
  /** The key new values are written with; must be one of `keys`. */
  currentKeyId: string;
  /**
   * Every key a stored value may have been written with, by id: 32 bytes, or their hex (64
   * characters) or base64. Keep a rotated key here while rows written with it are retained.
   */
  keys: Readonly<Record<string, Uint8Array | string>>;
}

/** A value as stored: the text (ciphertext in base64 when `keyId` is set) and its key's id. */
interface Sealed {
  text: string | null;
  keyId: string | null;
}

/**
 * Seals values into a row and opens them again. The associated data binds a ciphertext to its
 * row's (tenant, operation, key) and to what it is (`purpose`), so a value copied to another
 * row or another column does not decrypt.
 */
export interface AnswerCodec {
  seal(id: KeyIdentity, purpose: string, text: string | null): Sealed;
  open(id: KeyIdentity, purpose: string, sealed: Sealed): string | null;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** No encryption: values are stored in clear, and a row sealed with a key cannot be opened. */
const CLEAR: AnswerCodec = {
  seal: (_id, _purpose, text) => ({ text, keyId: null }),
  open: (id, _purpose, sealed) => {
    if (sealed.keyId !== null) throw unreadable(id, `its key "${sealed.keyId}" is not configured`);
    return sealed.text;
  },
};

/** The codec of `encryption`, or the clear one; throws one line when a key is unusable. */
export function answerCodec(encryption: AnswerEncryption | undefined): AnswerCodec {
  if (!encryption) return CLEAR;
  const keys = new Map(Object.entries(encryption.keys).map(([id, key]) => [id, keyBytes(id, key)]));
  const current = keys.get(encryption.currentKeyId);
  if (!current)
    throw new Error(
      `[@once/idempotency] encryption.currentKeyId "${encryption.currentKeyId}" is not one of encryption.keys`,
    );
  return {
    seal(id, purpose, text) {
      if (text === null) return { text, keyId: null };
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(associatedData(id, purpose));
      const body = Buffer.concat([
        iv,
        cipher.update(text, 'utf8'),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return { text: body.toString('base64'), keyId: encryption.currentKeyId };
    },
    open(id, purpose, sealed) {
      if (sealed.keyId === null || sealed.text === null) return sealed.text;
      const key = keys.get(sealed.keyId);
      if (!key) throw unreadable(id, `its key "${sealed.keyId}" is not configured`);
      const body = Buffer.from(sealed.text, 'base64');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES));
        decipher.setAAD(associatedData(id, purpose));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        const ciphertext = body.subarray(IV_BYTES, body.length - TAG_BYTES);
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      } catch (error) {
        throw unreadable(
          id,
          `it does not authenticate for this row with key "${sealed.keyId}"`,
          error,
        );
      }
    },
  };
}

function associatedData(id: KeyIdentity, purpose: string): Buffer {
  return Buffer.from(JSON.stringify(['once/v1', purpose, id.tenantId, id.operation, id.key]));
}

function keyBytes(id: string, key: Uint8Array | string): Buffer {
  const bytes =
    typeof key !== 'string'
      ? Buffer.from(key)
      : /^[0-9a-f]{64}$/i.test(key)
        ? Buffer.from(key, 'hex')
        : Buffer.from(key, 'base64');
  if (bytes.length !== 32)
    throw new Error(
      `[@once/idempotency] encryption key "${id}" is ${bytes.length} bytes; AES-256 needs 32 (64 hex characters)`,
    );
  return bytes;
}

function unreadable(id: KeyIdentity, why: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError('idempotency_answer_unreadable', {
    message: `The stored answer of ${id.operation} key ${JSON.stringify(id.key)} cannot be read: ${why}; nothing was run`,
    cause,
  });
}
