import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import {
  Idempotency as NodeIdempotency,
  IdempotencyError as NodeIdempotencyError,
  IdempotencyErrorCodes as NodeIdempotencyErrorCodes,
} from '@node-idempotency/core';
import { RedisStorageAdapter } from '@node-idempotency/storage-adapter-redis';
import type { Database } from '@once/db';
import { createClient } from '@redis/client';
import { type BenchPayInput, parsePayInput, writePayment } from './payment-write.ts';

const DAY_SECONDS = 24 * 60 * 60;

/**
 * `POST /peer/powertools`: the same write made idempotent by `@aws-lambda-powertools/idempotency`
 * (`makeIdempotent` over its Redis-compatible `CachePersistenceLayer`), keyed by the header.
 */
export async function createPowertoolsHandler(db: Database, redisUrl: string) {
  const client = await createClient({ url: redisUrl })
    .on('error', () => {})
    .connect();
  const persistenceStore = new CachePersistenceLayer({
    client: client as unknown as ConstructorParameters<typeof CachePersistenceLayer>[0]['client'],
  });
  const pay = makeIdempotent(
    (event: { key: string; input: BenchPayInput }) =>
      db.transaction((tx) => writePayment(tx, event.input, event.key)),
    {
      persistenceStore,
      config: new IdempotencyConfig({
        eventKeyJmesPath: 'key',
        payloadValidationJmesPath: 'input',
        expiresAfterSeconds: DAY_SECONDS,
      }),
    },
  );
  const handler = async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const key = request.headers.get('idempotency-key');
    if (!key) return Response.json({ error: 'missing key' }, { status: 400 });
    try {
      return Response.json(await pay({ key, input }), { status: 201 });
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'IdempotencyAlreadyInProgressError')
        return Response.json({ error: name }, { status: 409 });
      if (name === 'IdempotencyValidationError')
        return Response.json({ error: name }, { status: 422 });
      throw error;
    }
  };
  return { handler, close: () => client.close() };
}

/**
 * `POST /peer/node-idempotency`: the same write guarded by `@node-idempotency/core`
 * (`onRequest` before, `onResponse` after) over its Redis storage adapter.
 */
export async function createNodeIdempotencyHandler(db: Database, redisUrl: string) {
  const storage = new RedisStorageAdapter({ url: redisUrl });
  await storage.connect();
  const idempotency = new NodeIdempotency(storage, { cacheTTLMS: DAY_SECONDS * 1000 });
  const handler = async (request: Request): Promise<Response> => {
    const body = (await request.json()) as Record<string, unknown>;
    const input = parsePayInput(body);
    const req = {
      headers: Object.fromEntries(request.headers),
      path: '/peer/node-idempotency',
      method: 'POST',
      body,
    };
    try {
      const cached = await idempotency.onRequest(req);
      if (cached)
        return Response.json(cached.body, {
          status: 201,
          headers: { 'idempotent-replayed': 'true' },
        });
    } catch (error) {
      if (!(error instanceof NodeIdempotencyError)) throw error;
      const status =
        error.code === NodeIdempotencyErrorCodes.REQUEST_IN_PROGRESS
          ? 409
          : error.code === NodeIdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH
            ? 422
            : 400;
      return Response.json({ error: error.code }, { status });
    }
    const key = request.headers.get('idempotency-key') ?? '';
    const result = await db.transaction((tx) => writePayment(tx, input, key));
    await idempotency.onResponse(req, { body: result });
    return Response.json(result, { status: 201 });
  };
  return { handler, close: () => storage.disconnect() };
}
