import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultKind, startFaultProxy } from './fault-proxy.ts';

let upstream: http.Server;
let upstreamUrl: string;
let received = 0;

beforeAll(async () => {
  upstream = http.createServer((request, response) => {
    received++;
    request.resume();
    request.on('end', () => response.writeHead(201).end(`run ${received}`));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

/** One POST through a proxy that always injects `fault`: what the client and upstream saw. */
async function through(fault: FaultKind) {
  received = 0;
  const proxy = await startFaultProxy({ upstream: upstreamUrl, seed: 1, mix: { [fault]: 1 } });
  try {
    const answer = await fetch(`${proxy.url}/checkout`, {
      method: 'POST',
      headers: { 'idempotency-key': 'k1' },
      body: '{}',
    }).then(
      (response) => response.status,
      () => 'no answer' as const,
    );
    await proxy.drain();
    return { answer, received, attempts: proxy.attempts, faults: proxy.faults[fault] };
  } finally {
    await proxy.close();
  }
}

describe('startFaultProxy', () => {
  it('drop_answer: the upstream ran and answered, the client hears nothing', async () => {
    const seen = await through('drop_answer');
    expect(seen).toMatchObject({ answer: 'no answer', received: 1, faults: 1 });
    expect(seen.attempts).toMatchObject([{ status: 201, delivered: false, key: 'k1' }]);
  });

  it('reset: the upstream never sees the request', async () => {
    expect(await through('reset')).toMatchObject({ answer: 'no answer', received: 0 });
  });

  it('duplicate_at_once and duplicate_late: the upstream sees the request twice', async () => {
    for (const fault of ['duplicate_at_once', 'duplicate_late'] as const) {
      const seen = await through(fault);
      expect(seen).toMatchObject({ answer: 201, received: 2 });
      expect(seen.attempts.map((a) => a.origin).sort()).toEqual(['client', fault].sort());
    }
  });

  it('draws the same faults for the same seed and keys', async () => {
    const draw = async (headers: (n: number) => Record<string, string>, body?: string) => {
      const proxy = await startFaultProxy({ upstream: upstreamUrl, seed: 7, keyPrefix: 'run-' });
      const faults: string[] = [];
      try {
        for (let n = 0; n < 20; n++) {
          const before = { ...proxy.faults };
          await fetch(`${proxy.url}/`, {
            method: 'POST',
            headers: headers(n),
            body: body?.replace('N', String(n)),
          }).catch(() => {});
          faults.push(
            Object.keys(before).find(
              (k) => proxy.faults[k as FaultKind] !== before[k as FaultKind],
            ) ?? 'none',
          );
        }
        await proxy.drain();
      } finally {
        await proxy.close();
      }
      return faults;
    };
    const byKey = (n: number) => ({ 'idempotency-key': `run-${n}` });
    const first = await draw(byKey);
    expect(new Set(first).size).toBeGreaterThan(1);
    expect(await draw(byKey)).toEqual(first);
    // A key of no run's (an SDK's random one) is drawn by the body, the run's prefix stripped.
    const randomKey = () => ({ 'idempotency-key': `stripe-node-retry-${randomUUID()}` });
    const byBody = await draw(randomKey, 'metadata[checkout_key]=run-N');
    expect(new Set(byBody).size).toBeGreaterThan(1);
    expect(await draw(randomKey, 'metadata[checkout_key]=run-N')).toEqual(byBody);
  });
});
