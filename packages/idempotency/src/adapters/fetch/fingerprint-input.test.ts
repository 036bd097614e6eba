import { describe, expect, it } from 'vitest';
import { defaultFingerprintInput, fingerprintInputOf } from './fingerprint-input.ts';

const request = (body: string, type: string) =>
  new Request('http://api/v1/payments?b=2&a=1', {
    method: 'POST',
    headers: { 'content-type': type },
    body,
  });

describe('default fingerprint input', () => {
  it('defaultFingerprintInput leaves the body unread; the wrapper path (text read once) gives the same input', async () => {
    for (const [body, type] of [
      ['{"amount":100,"currency":"eur"}', 'application/json'],
      ['not json', 'application/json'],
      ['b=2&a=1', 'application/x-www-form-urlencoded'],
      ['plain text', 'text/plain'],
      ['', 'application/json'],
    ] as const) {
      const original = request(body, type);
      const input = await defaultFingerprintInput(original);
      expect(original.bodyUsed).toBe(false);
      expect(await original.text()).toBe(body);
      expect(fingerprintInputOf(request(body, type), body)).toEqual(input);
    }
  });

  it('parses by content type (kept with the body): JSON value, form pairs sorted by name, empty body as null', () => {
    const json = fingerprintInputOf(request('', 'application/json'), '{"b":1,"a":2}');
    expect(json).toEqual({
      method: 'POST',
      path: '/v1/payments',
      query: [
        ['a', '1'],
        ['b', '2'],
      ],
      body: { type: 'application/json', json: { b: 1, a: 2 } },
    });
    const form = fingerprintInputOf(request('', 'application/x-www-form-urlencoded'), 'z=1&a=2');
    expect((form as { body: unknown }).body).toEqual({
      type: 'application/x-www-form-urlencoded',
      form: [
        ['a', '2'],
        ['z', '1'],
      ],
    });
    expect(
      (fingerprintInputOf(request('', 'text/plain'), '') as { body: unknown }).body,
    ).toBeNull();
  });
});
