import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, type ExpectStatic, expect, it } from 'vitest';
import { MISSING_TABLES_MESSAGE } from '../src/store/drizzle/missing-tables.ts';
import { accepts, freePort } from '../src/testing/ports.ts';
import {
  createIdempotencyTestDatabase,
  testAdminUrl,
  withDatabase,
} from '../src/testing/test-database.ts';
import { bin, run } from './build-and-pack.ts';
import { consumerEnv } from './consumer-project.ts';
import {
  type Quickstart,
  readQuickstarts,
  readReadme,
  writeApp,
  writeQuickstarts,
} from './quickstart-docs.ts';

/**
 * Each `docs/quickstart-*.md` run as written, from the installed tarball, against one real
 * database: its code blocks type-check together, its server starts, its client prints exactly
 * the output the page shows. The same pages with `complete(db, ...)` in place of
 * `complete(tx, ...)` must not compile, and a server started on a database without the tables
 * must stop with the one line naming the migration.
 */
export function describeQuickstarts(projectDir: () => string) {
  describe('quickstarts (docs/quickstart-*.md), as written', () => {
    const pages = new Map(readQuickstarts().map((q) => [q.name, q]));
    const readme = readReadme();
    const page = (name: string): Quickstart => {
      const found = pages.get(name);
      if (!found) throw new Error(`docs/quickstart-${name}.md is missing`);
      return found;
    };
    const fileOf = (name: string, file: string) => {
      const found = page(name).files.find((f) => f.file === file);
      if (!found) throw new Error(`quickstart-${name}.md shows no ${file}`);
      return found;
    };
    // Pages that reuse another page's files say so in their text; the test assembles the same.
    const apps = [
      { name: 'trpc', files: page('trpc').files },
      {
        name: 'trpc-standalone',
        files: [
          ...page('trpc-standalone').files,
          fileOf('trpc', 'router.ts'),
          fileOf('trpc', 'client.ts'),
        ],
      },
      { name: 'fetch', files: page('fetch').files },
      { name: 'hono', files: [...page('hono').files, fileOf('fetch', 'client.ts')] },
      { name: 'next', files: [...page('next').files, { file: 'check.ts', code: NEXT_CHECK }] },
      // Type-checked only: the README's example, after declarations of what it leaves out.
      { name: 'readme', files: [{ file: 'example.ts', code: README_PRELUDE + readme.example }] },
      // The README's completer: its phases complete the key, not a complete(tx, ...) of its own.
      { name: 'readme-completer', files: [{ file: 'completer.ts', code: readme.completer }] },
      // The README's encrypted answers and tombstones: the engine stores what its handler returns.
      { name: 'readme-at-rest', files: [{ file: 'at-rest.ts', code: readme.atRest }] },
    ];
    const runsWithoutServer = new Set(['readme-completer', 'readme-at-rest']);
    let dir: string;
    let database: Awaited<ReturnType<typeof createDatabases>>;
    let started: number;

    beforeAll(async () => {
      started = Date.now();
      dir = path.join(projectDir(), 'quickstarts');
      database = await createDatabases();
      const wrongTx = apps.map(({ name, files }) => ({
        name: `wrong-tx/${name}`,
        files: files.map(({ file, code }) => ({
          file,
          code: code.replaceAll('complete(tx,', 'complete(db,'),
        })),
      }));
      // One compiler run for both (loading the frameworks' types is most of its time).
      await writeQuickstarts(dir, [...apps, ...wrongTx]);
    }, 60_000);
    afterAll(async () => {
      await database?.drop();
      console.log(`quickstart tests took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    });

    it('every page is covered; its code type-checks, and with complete(db, ...) it does not', async () => {
      expect([...pages.keys(), 'readme', ...runsWithoutServer].sort()).toEqual(
        apps.map((a) => a.name).sort(),
      );
      // One line per error (its explanation follows indented).
      const errors = (await typeCheck(dir)).split('\n').filter((line) => /^\S/.test(line));
      expect(errors.filter((line) => !line.startsWith('wrong-tx/'))).toEqual([]);
      for (const { name, files } of apps.filter((a) => !runsWithoutServer.has(a.name))) {
        const completing = files.filter((f) => f.code.includes('complete(tx,'));
        expect(completing.length, `${name} completes in its transaction`).toBeGreaterThan(0);
        for (const { file } of completing)
          expect(errors.join('\n'), `${name}/${file}`).toContain(`wrong-tx/${name}/${file}(`);
      }
    }, 120_000);

    for (const name of ['trpc', 'trpc-standalone', 'fetch', 'hono']) {
      // The apps are independent (own port, own keys): they run side by side.
      it.concurrent(`${name}: the client prints what the page shows`, async ({ expect }) => {
        const server = await startServer(path.join(dir, name), database.url);
        try {
          const { stdout } = await tsx(path.join(dir, name), 'client.ts', {
            PORT: String(server.port),
          });
          expect(stdout).toBe(page(name).output);
          if (name === 'trpc-standalone') await expectReplayHeader(server.port, expect);
        } finally {
          await server.stop();
        }
      }, 60_000);
    }

    it.concurrent('next: the page renders a key, the Server Action runs once and replays', async ({
      expect,
    }) => {
      const { stdout } = await tsx(path.join(dir, 'next'), 'check.ts', {
        DATABASE_URL: database.url,
        NEXT_RUNTIME: 'nodejs', // what Next.js sets for register() on its Node.js server
      });
      expect(JSON.parse(stdout)).toEqual({
        ok: [true, true],
        replayed: [false, true],
        sameOrder: true,
      });
    }, 60_000);

    it.concurrent('next: built with next build and started as shipped, two visitors get two keys', async ({
      expect,
    }) => {
      const app = path.join(projectDir(), 'next-app');
      await writeApp(app, page('next').files);
      const next = path.join(projectDir(), 'node_modules/next/dist/bin/next');
      const env = { DATABASE_URL: database.url };
      const built = Date.now();
      await run(process.execPath, [next, 'build'], {
        cwd: app,
        env: consumerEnv(env),
        timeout: 240_000,
        maxBuffer: 16 * 1024 * 1024,
      }).catch((error: { stdout: string; stderr: string }) => {
        throw new Error(`next build failed:\n${error.stdout}\n${error.stderr}`);
      });
      console.log(
        `next build of the quickstart took ${((Date.now() - built) / 1000).toFixed(1)} s`,
      );
      const server = await startServer(app, database.url, [next, 'start', '--port']);
      try {
        const keyOf = async () => {
          const html = await (await fetch(`http://localhost:${server.port}/`)).text();
          return /name="idempotency-key" value="([^"]+)"/.exec(html)?.[1];
        };
        const [first, second] = [await keyOf(), await keyOf()];
        expect(first).toMatch(/^[0-9a-f-]{36}$/);
        expect(second).toMatch(/^[0-9a-f-]{36}$/);
        expect(second).not.toBe(first);
      } finally {
        await server.stop();
      }
    }, 300_000);

    it.concurrent("the README's completer prints what the README shows", async ({ expect }) => {
      const { stdout } = await tsx(path.join(dir, 'readme-completer'), 'completer.ts', {
        DATABASE_URL: database.url,
      });
      expect(stdout).toBe(readme.outputs['completer.ts']);
    }, 60_000);

    it.concurrent("the README's encrypted answers and tombstones print what the README shows", async ({
      expect,
    }) => {
      const { stdout } = await tsx(path.join(dir, 'readme-at-rest'), 'at-rest.ts', {
        DATABASE_URL: database.url,
        ANSWER_KEY: randomBytes(32).toString('hex'),
      });
      expect(stdout).toBe(readme.outputs['at-rest.ts']);
    }, 60_000);

    it.concurrent('a server started without the tables stops with the one line naming the migration', async ({
      expect,
    }) => {
      const failed = await tsx(path.join(dir, 'fetch'), 'server.ts', {
        DATABASE_URL: database.emptyUrl,
        PORT: '0',
      }).catch((error: { stderr: string }) => error);
      expect((failed as { stderr: string }).stderr).toContain(MISSING_TABLES_MESSAGE);
    }, 60_000);
  });
}

/** What the README's example assumes: a Drizzle database, an `orders` table, authentication. */
const README_PRELUDE = `import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
declare const db: PostgresJsDatabase;
const orders = pgTable('orders', { id: serial().primaryKey(), sku: text().notNull() });
declare function tenantOf(request: Request): Promise<string>;
`;

/** The Next quickstart's part a browser plays: render the page, post its form twice. */
const NEXT_CHECK = `import { renderToString } from 'react-dom/server';
import { placeOrder } from './app/actions';
import Page from './app/page';
import { register } from './instrumentation';

await register();
const html = renderToString(Page());
const key = /name="idempotency-key" value="([^"]+)"/.exec(html)?.[1] ?? '';
const form = new FormData();
form.set('idempotency-key', key);
form.set('sku', 'book');
const first = await placeOrder(form);
const retry = await placeOrder(form);
console.log(JSON.stringify({
  ok: [first.ok, retry.ok],
  replayed: [first.ok && first.replayed, retry.ok && retry.replayed],
  sameOrder: first.ok && retry.ok && first.data.orderId === retry.data.orderId,
}));
process.exit(0);
`;

/** tsc's report, its paths relative to `dir`. */
async function typeCheck(dir: string): Promise<string> {
  const result = await run(bin('tsc'), ['--noEmit', '-p', '.'], {
    cwd: dir,
    env: consumerEnv(),
  }).catch((error: { stdout: string }) => error);
  return result.stdout;
}

function tsx(cwd: string, file: string, env: Record<string, string>) {
  return run(bin('tsx'), [file], { cwd, env: consumerEnv(env), timeout: 30_000 });
}

async function createDatabases() {
  // What the pages' migration step leaves: the library's tables, and the app's `orders`.
  const migrated = await createIdempotencyTestDatabase('quickstarts', 1);
  await migrated.sql.unsafe('create table orders (id serial primary key, sku text not null)');
  const admin = postgres(testAdminUrl(), { max: 1, onnotice: () => {} });
  const empty = `quickstarts_empty_${Date.now().toString(36)}`;
  await admin.unsafe(`create database ${empty}`);
  return {
    url: migrated.url,
    emptyUrl: withDatabase(testAdminUrl(), empty),
    async drop() {
      await migrated.drop();
      await admin.unsafe(`drop database if exists ${empty} with (force)`);
      await admin.end();
    },
  };
}

/**
 * The page's server.ts on a free port (or `node <args> <port>`), once it accepts connections.
 * Its own process group: `next start` serves from a child process the group's kill reaches.
 */
async function startServer(cwd: string, databaseUrl: string, nodeArgs?: string[]) {
  const port = await freePort();
  const [command, args] = nodeArgs
    ? [process.execPath, [...nodeArgs, String(port)]]
    : [bin('tsx'), ['server.ts']];
  const child: ChildProcess = spawn(command, args, {
    cwd,
    env: consumerEnv({ DATABASE_URL: databaseUrl, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      process.kill(-child.pid!, 'SIGTERM');
    });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`server.ts exited:\n${output}`);
    if (await accepts(port, 'localhost')) return { port, stop };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await stop();
  throw new Error(`server.ts never listened:\n${output}`);
}

/** The standalone adapter's header plumbing: a replay says so in `Idempotent-Replayed`. */
async function expectReplayHeader(port: number, expect: ExpectStatic) {
  const send = () =>
    fetch(`http://localhost:${port}/trpc/placeOrder`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'standalone-header' },
      body: JSON.stringify({ sku: 'book' }),
    });
  expect((await send()).headers.get('idempotent-replayed')).toBeNull();
  expect((await send()).headers.get('idempotent-replayed')).toBe('true');
}
