import { createHash } from 'node:crypto';

/**
 * How a tenant's REST API key is stored (`tenants.api_key_sha256`): the seed writes it with
 * this and authentication looks keys up with it, so the two can never disagree.
 */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}
