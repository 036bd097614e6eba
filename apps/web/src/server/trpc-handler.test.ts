import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedHandler } from './testing/serve-fetch.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

const OPERATOR_CODE = 'http-test-operator-code';

/**
 * The tRPC endpoint's own refusals over real HTTP: mutations only as JSON (a form from a
 * sibling origin cannot end or start a session), and `session.start`'s rate limit.
 */
describe('tRPC endpoint over real HTTP', () => {
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('web_trpc_handler', {
      SESSION_SECRET: 'trpc-handler-test-session-secret',
      ONCE_OPERATOR_CODE: OPERATOR_CODE,
      ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE: '5',
    });
    ({ server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  const post = (path: string, init: { headers?: Record<string, string>; body?: BodyInit }) =>
    fetch(`${server.url}/api/trpc/${path}`, { method: 'POST', ...init });

  async function operatorCookie(address: string): Promise<string> {
    const response = await post('session.start', {
      headers: { 'content-type': 'application/json', 'x-once-client-address': address },
      body: JSON.stringify({
        demoTenantId: 'tenant_a',
        role: 'operator',
        operatorCode: OPERATOR_CODE,
      }),
    });
    expect(response.status).toBe(200);
    return response.headers.getSetCookie()[0]!.split(';')[0]!;
  }

  describe('mutations only as application/json (logout CSRF)', () => {
    it.each([
      [
        'multipart/form-data (what a cross-site <form enctype=multipart> sends)',
        () => {
          const form = new FormData();
          form.set('x', '1');
          return { body: form, headers: {} };
        },
      ],
      [
        'application/x-www-form-urlencoded',
        () => ({
          body: 'x=1',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      ],
      ['text/plain', () => ({ body: '{}', headers: { 'content-type': 'text/plain' } })],
      ['no content type', () => ({ body: undefined, headers: {} })],
    ])(
      'session.end as %s: 415 unsupported_media_type, the session is not ended',
      async (_, make) => {
        const cookie = await operatorCookie('192.0.2.1');
        const { body, headers } = make();
        const response = await post('session.end', {
          headers: { ...headers, cookie, origin: 'http://sibling.localhost:3001' },
          ...(body === undefined ? {} : { body }),
        });
        expect(response.status).toBe(415);
        expect((await response.json()).error.data).toMatchObject({
          code: 'unsupported_media_type',
          httpStatus: 415,
          details: { accepted: ['application/json'] },
        });
        expect(response.headers.getSetCookie()).toEqual([]);
      },
    );

    it('session.start as a form sets no cookie; as JSON (with a charset) it works', async () => {
      const form = new FormData();
      form.set('demoTenantId', 'tenant_a');
      const refused = await post('session.start', { body: form });
      expect(refused.status).toBe(415);
      expect(refused.headers.getSetCookie()).toEqual([]);

      const cookie = await operatorCookie('192.0.2.2');
      const ended = await post('session.end', {
        headers: { 'content-type': 'application/json; charset=utf-8', cookie },
      });
      expect(ended.status).toBe(200);
      expect(ended.headers.getSetCookie()[0]).toMatch(/^once_operator_session=; /);
    });

    it('queries over GET are unaffected', async () => {
      const response = await fetch(`${server.url}/api/trpc/session.current`);
      expect(response.status).toBe(200);
    });
  });

  describe('session.start rate limit (ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE=5)', () => {
    it('the 6th start from one address in a minute is 429 + Retry-After, no cookie; another address passes', async () => {
      const start = (address: string) =>
        post('session.start', {
          headers: { 'content-type': 'application/json', 'x-once-client-address': address },
          body: JSON.stringify({ demoTenantId: 'tenant_a' }),
        });
      // The window is fixed by the wall clock: never start the burst in its last seconds.
      const toNextMinute = 60_000 - (Date.now() % 60_000);
      if (toNextMinute < 5_000) await new Promise((r) => setTimeout(r, toNextMinute + 50));
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push(await start('198.51.100.23'));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      const refused = answers[5]!;
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers.getSetCookie()).toEqual([]);
      expect((await refused.json()).error.data).toMatchObject({
        code: 'session_rate_limited',
        httpStatus: 429,
        trpcCode: 'TOO_MANY_REQUESTS',
      });
      expect((await start('198.51.100.24')).status).toBe(200);
    });
  });
});
