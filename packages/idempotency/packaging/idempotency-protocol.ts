import { expect } from 'vitest';

/** One answer of a consumer app, whatever its transport (tRPC, REST, Server Action, GraphQL). */
export interface ConsumerAnswer {
  status: number;
  replayed: boolean;
  retryAfter: string | null;
  /** The stable refusal code (`idempotency_key_reused`, ...), when refused. */
  code: string | undefined;
  data: unknown;
}

export type ConsumerCall = (
  key: string,
  input: { amount: number; gate?: string },
) => Promise<ConsumerAnswer>;

async function waitUntilEntered(baseUrl: string, gate: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const answer = (await (await fetch(`${baseUrl}/test/gate?id=${gate}`)).json()) as {
      entered: boolean;
    };
    if (answer.entered) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the handler never reached gate ${gate}`);
}

/**
 * The four answers every consumer must give, against real PostgreSQL: a first call runs, a
 * retry replays it (`Idempotent-Replayed: true`), the key with another input is refused
 * (422), and a duplicate while the first is still running is refused (409 + Retry-After).
 */
export async function proveIdempotency(baseUrl: string, call: ConsumerCall, label: string) {
  const first = await call(`${label}-1`, { amount: 100 });
  expect(first, 'first call').toMatchObject({ status: 200, replayed: false });

  const replay = await call(`${label}-1`, { amount: 100 });
  expect(replay, 'replay').toMatchObject({ status: 200, replayed: true, data: first.data });

  const reused = await call(`${label}-1`, { amount: 999 });
  expect(reused, 'reuse with another input').toMatchObject({
    status: 422,
    code: 'idempotency_key_reused',
  });

  const gate = `${label}-gate`;
  const held = call(`${label}-2`, { amount: 5, gate });
  await waitUntilEntered(baseUrl, gate);
  const duplicate = await call(`${label}-2`, { amount: 5, gate });
  expect(duplicate, 'duplicate in flight').toMatchObject({
    status: 409,
    code: 'idempotency_key_in_use',
  });
  expect(Number(duplicate.retryAfter)).toBeGreaterThan(0);
  await fetch(`${baseUrl}/test/gate?id=${gate}&release=1`);
  expect(await held, 'the held call finishes').toMatchObject({ status: 200, replayed: false });
}
