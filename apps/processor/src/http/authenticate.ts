import { eq } from 'drizzle-orm';
import type { ProcessorDatabase } from '../db/client.ts';
import { accounts } from '../db/schema/index.ts';
import { StripeApiError } from '../stripe/stripe-error.ts';
import type { Account } from '../stripe/stripe-operation.ts';

/**
 * Finds the merchant account of a request from `Authorization: Bearer sk_test_...`
 * (or HTTP Basic with the key as user name, as curl -u does). Stripe's 401 otherwise.
 */
export async function authenticate(db: ProcessorDatabase, request: Request): Promise<Account> {
  const key = secretKeyOf(request.headers.get('authorization'));
  if (!key) {
    throw new StripeApiError(401, {
      type: 'invalid_request_error',
      message:
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
    });
  }
  const [account] = await db.select().from(accounts).where(eq(accounts.secretKey, key));
  if (!account) {
    throw new StripeApiError(401, {
      type: 'invalid_request_error',
      code: 'api_key_invalid',
      message: `Invalid API Key provided: ${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`,
    });
  }
  return account;
}

function secretKeyOf(header: string | null): string | undefined {
  if (!header) return undefined;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value.trim();
  if (scheme?.toLowerCase() === 'basic') {
    return Buffer.from(value, 'base64').toString().split(':', 1)[0] || undefined;
  }
  return undefined;
}
