import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import {
  createProcessorWebhookHandler,
  processorClientsFrom,
  type ServedHandler,
  serveFetch,
  startWebRuntime,
  type WebRuntime,
  webApiRoutes,
} from '@once/web/testing';
import { type RunningProcess, startWorkerProcess } from '@once/worker/testing';
import postgres from 'postgres';

export interface TestSystemOptions {
  /** Names this system's two databases (`<label>` and `processor_<label>`). */
  label: string;
  /** PROCESSOR_WEBHOOK_SECRET, shared by the processor's signer and the web's checker. */
  webhookSecret: string;
  /** The web host's clock; default: the real one. */
  webClock?: { now(): Date };
  /** Where the processor delivers its webhooks; default: this system's web receiver. */
  webhookUrl?: string;
  /** An already migrated app database to use (and not drop) instead of a fresh one. */
  app?: TestDatabase;
}

export interface TestSystem {
  /** The web's database (migrated; the runtime seeds the demo merchants). */
  app: TestDatabase;
  /** The web runtime serving `web` (its clock is `webClock` when given). */
  runtime: WebRuntime;
  /** The web's API routes over real HTTP; its webhook receiver asks this system's processor. */
  web: ServedHandler;
  processor: RunningProcessor;
  /** A small pool on the processor's database, to read its ledger. */
  processorSql: postgres.Sql;
  processorDatabaseUrl: string;
  /** A worker process over the web's database and this processor; stopped by `close()`. */
  startWorker(workerId: string): Promise<RunningProcess>;
  /** Stops workers, processor and web, ends the pools and drops both databases. */
  close(): Promise<void>;
}

/**
 * The whole payment system as the root's system tests run it: the web's routes and the real
 * processor in this process over real HTTP (one database each), and real worker processes
 * started on demand.
 */
export async function startTestSystem(options: TestSystemOptions): Promise<TestSystem> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    while (closers.length > 0) await closers.pop()!();
  };
  try {
    const app = options.app ?? (await createTestDatabase(options.label));
    if (!options.app) closers.push(() => app.drop());
    const started = await startWebRuntime({
      DATABASE_URL: app.url,
      SESSION_SECRET: `${options.label}-session-secret-0123456789`,
      PROCESSOR_WEBHOOK_SECRET: options.webhookSecret,
    });
    closers.push(() => started.client.close());
    const runtime: WebRuntime = options.webClock
      ? { ...started, deps: { ...started.deps, clock: options.webClock } }
      : started;
    // The web listens before the processor starts (the processor needs its webhook URL);
    // it answers once the processor it asks is known.
    let routes: (request: Request) => Promise<Response> = async () =>
      new Response('starting', { status: 503 });
    const web = await serveFetch((request) => routes(request));
    closers.push(() => web.close());

    const processorDb: ProcessorTestDatabase = await createProcessorTestDatabase(options.label);
    closers.push(() => processorDb.drop());
    const processorSql = postgres(processorDb.url, { max: 2, onnotice: () => {} });
    closers.push(() => processorSql.end());
    const processor = await startTestProcessor({
      databaseUrl: processorDb.url,
      webhookUrl: options.webhookUrl ?? `${web.url}/api/webhooks/processor`,
      webhookSecret: options.webhookSecret,
      webhookBackoffMs: 100,
    });
    closers.push(() => processor.stop());

    const getRuntime = async () => runtime;
    // The receiver asks the processor through the same client factory production uses.
    const webhook = createProcessorWebhookHandler(getRuntime, {
      processorFor: processorClientsFrom({
        PROCESSOR_URL: processor.url,
        PROCESSOR_ADMIN_TOKEN: 'unused-by-the-receiver',
      }),
    });
    const api = webApiRoutes(getRuntime);
    routes = (request) =>
      new URL(request.url).pathname === '/api/webhooks/processor' ? webhook(request) : api(request);

    const workers: RunningProcess[] = [];
    closers.push(() => Promise.all(workers.map((worker) => worker.stop())));
    return {
      app,
      runtime,
      web,
      processor,
      processorSql,
      processorDatabaseUrl: processorDb.url,
      async startWorker(workerId) {
        const worker = await startWorkerProcess(
          { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
          workerId,
        );
        workers.push(worker);
        return worker;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
