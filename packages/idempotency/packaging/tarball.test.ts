import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type PackedPackage, packPackage, startConsumerServer } from '@once/scripts/pack';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeContractCases } from '../src/store/contract/store-contract.ts';
import { testAdminUrl, withDatabase } from '../src/testing/test-database.ts';
import { bin, packageDir, run } from './build-and-pack.ts';
import { consumerEnv, createConsumerProject } from './consumer-project.ts';
import { type ConsumerAnswer, proveIdempotency } from './idempotency-protocol.ts';
import { describeQuickstarts } from './quickstart-tests.ts';

/**
 * The package as `npm publish` would upload it, built and packed ONCE: checked the way
 * consumers resolve it (publint, arethetypeswrong, the list of files it ships), then
 * installed from the tarball into a fresh project outside the workspace, where each consumer
 * app proves the protocol against real PostgreSQL.
 *
 * `ONCE_SKIP_CONSUMER_TESTS=1` skips the consumer apps (they install real packages), and the
 * skip shows in the summary; nothing else skips them.
 */
interface Manifest {
  exports: Record<string, string | Record<string, string>>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
}
const manifest = JSON.parse(
  readFileSync(path.join(packageDir, 'package.json'), 'utf8'),
) as Manifest;

/** Everything a consumer may find in the tarball; anything else is a packaging mistake. */
const SHIPPED = [
  /^package\.json$/,
  /^README\.md$/,
  /^CHANGELOG\.md$/,
  /^LICENSE$/,
  /^docs\/.+\.md$/,
  /^dist\/.+\.(js|js\.map|d\.ts|d\.ts\.map)$/,
  /^src\/.+\.ts$/,
];
const NEVER_SHIPPED = [
  /\.test\.ts$/,
  /^src\/proof\//,
  /^src\/testing\//,
  /^dist\/(proof|testing)\//,
];

let packed: PackedPackage;
beforeAll(async () => {
  packed = await packPackage(packageDir);
}, 180_000);
afterAll(async () => {
  await packed?.dispose();
});

describe('the published package', () => {
  it('passes publint in strict mode (warnings count as errors)', async () => {
    const result = await run(bin('publint'), ['run', packed.tarball, '--strict'], {
      cwd: packageDir,
    }).catch((error: { stdout: string; stderr: string }) => error);
    expect(`${result.stdout}${result.stderr}`).toContain('All good!');
  }, 120_000);

  it('resolves with types for Node ESM and bundlers (arethetypeswrong, ESM-only profile)', async () => {
    const result = await run(
      bin('attw'),
      [packed.tarball, '--profile', 'esm-only', '--format', 'json'],
      { cwd: packageDir },
    ).catch((error: { stdout: string; code?: number }) => error);
    const report = JSON.parse(result.stdout) as {
      analysis: { problems: { resolutionKind?: string }[] };
    };
    // The JSON lists what the profile ignores too: CommonJS resolution of an ESM-only package.
    const ESM_ONLY_IGNORES = ['node10', 'node16-cjs'];
    const problems = report.analysis.problems.filter(
      (p) => !ESM_ONLY_IGNORES.includes(p.resolutionKind ?? ''),
    );
    expect(problems).toEqual([]);
    expect((result as { code?: number }).code ?? 0).toBe(0);
  }, 120_000);

  it('ships only the build, the sources, the docs and the manifest', async () => {
    // The tarball's own listing: `npm pack --dry-run` would run the prepack build again.
    const { stdout } = await run('tar', ['-tzf', packed.tarball]);
    const files = stdout
      .split('\n')
      .filter((entry) => entry !== '' && !entry.endsWith('/'))
      .map((entry) => entry.replace(/^package\//, ''));
    expect(files.filter((f) => !SHIPPED.some((re) => re.test(f)))).toEqual([]);
    expect(files.filter((f) => NEVER_SHIPPED.some((re) => re.test(f)))).toEqual([]);
    for (const target of Object.values(manifest.exports).flatMap((t) =>
      typeof t === 'string' ? [t] : Object.values(t),
    )) {
      expect(files, `export target ${target}`).toContain(target.replace(/^\.\//, ''));
    }
    for (const file of files.filter((f) => /^dist\/.+\.js$/.test(f))) {
      expect(files, 'every module has its source map and declarations').toEqual(
        expect.arrayContaining([`${file}.map`, file.replace(/\.js$/, '.d.ts')]),
      );
    }
  }, 120_000);

  it('every relative link of a shipped Markdown file points to a shipped file', async () => {
    const { stdout } = await run('tar', ['-tzf', packed.tarball]);
    const files = new Set(
      stdout
        .split('\n')
        .filter((entry) => entry.endsWith('.md'))
        .map((entry) => entry.replace(/^package\//, '')),
    );
    expect(files).toContain('README.md');
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(packageDir, file), 'utf8');
      for (const [, target = ''] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        const shipped = path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
        if (!files.has(shipped) && !stdout.includes(`package/${shipped}\n`))
          broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  }, 120_000);

  it('gives every entry point types, ESM and the in-repo source condition', () => {
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      if (subpath === './package.json') continue;
      expect(target, subpath).toEqual({
        '@once/source': expect.stringMatching(/^\.\/src\/.+\.ts$/),
        types: expect.stringMatching(/^\.\/dist\/.+\.d\.ts$/),
        default: expect.stringMatching(/^\.\/dist\/.+\.js$/),
      });
    }
  });

  it('makes every framework an optional peer, drizzle-orm a required one', () => {
    const optional = Object.keys(manifest.peerDependencies).filter(
      (name) => manifest.peerDependenciesMeta[name]?.optional,
    );
    expect(Object.keys(manifest.peerDependencies)).toContain('drizzle-orm');
    expect(optional).not.toContain('drizzle-orm');
    expect(optional).toEqual(
      Object.keys(manifest.peerDependencies).filter((n) => n !== 'drizzle-orm'),
    );
  });
});

const skipConsumers = process.env.ONCE_SKIP_CONSUMER_TESTS === '1';

/** An empty database on the test cluster for one consumer app; dropped afterwards. */
async function createEmptyDatabase(label: string) {
  const admin = postgres(testAdminUrl(), { max: 1, onnotice: () => {} });
  const name = `consumer_${label}_${Date.now().toString(36)}`;
  await admin.unsafe(`create database ${name}`);
  return {
    url: withDatabase(testAdminUrl(), name),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

describe.skipIf(skipConsumers)('consumers installing the tarball', () => {
  let projectDir: string;
  beforeAll(async () => {
    projectDir = path.join(packed.tempDir, 'consumer');
    const started = Date.now();
    await createConsumerProject(projectDir, packed.tarball);
    console.log(`consumer project installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 240_000);

  it('a plain Node tRPC server on postgres.js + Drizzle, migrated from the exported tables', async () => {
    const trpcDir = path.join(projectDir, 'trpc');
    await run(
      process.execPath,
      [path.join(projectDir, 'node_modules/drizzle-kit/bin.cjs'), 'generate'],
      {
        cwd: trpcDir,
        env: { ...process.env, NODE_OPTIONS: '' },
      },
    );
    const migration = readFileSync(path.join(trpcDir, 'drizzle', readdirSql(trpcDir)), 'utf8');
    expect(migration).toContain('CREATE TABLE "idempotency_keys"');
    expect(migration).toContain('"principal" text DEFAULT \'\' NOT NULL');

    const database = await createEmptyDatabase('trpc');
    const server = await startConsumerServer(
      trpcDir,
      ['server.js'],
      consumerEnv({
        DATABASE_URL: database.url,
      }),
    );
    try {
      await proveIdempotency(
        server.baseUrl,
        (key, input) => callTrpc(server.baseUrl, key, input),
        'trpc',
      );
      const sql = postgres(database.url, { max: 1, onnotice: () => {} });
      const [row] = await sql`select count(*)::int as n from payments`;
      await sql.end();
      expect(row?.n, 'one payment per key').toBe(2);
    } finally {
      await server.stop();
      await database.drop();
    }
  }, 120_000);

  it("Next.js: an app-router route handler and a Server Action, with next/server's NextRequest", async () => {
    const database = await createEmptyDatabase('next');
    const server = await startConsumerServer(
      path.join(projectDir, 'next'),
      ['server.js'],
      consumerEnv({
        DATABASE_URL: database.url,
      }),
    );
    try {
      await proveIdempotency(
        server.baseUrl,
        (key, input) => callJson(`${server.baseUrl}/route`, key, input),
        'route',
      );
      await proveIdempotency(
        server.baseUrl,
        (key, input) => callJson(`${server.baseUrl}/action`, key, input),
        'action',
      );
    } finally {
      await server.stop();
      await database.drop();
    }
  }, 120_000);

  it('a Hono app with the idempotency middleware, on @hono/node-server', async () => {
    const database = await createEmptyDatabase('hono');
    const server = await startConsumerServer(
      path.join(projectDir, 'hono'),
      ['server.js'],
      consumerEnv({
        DATABASE_URL: database.url,
      }),
    );
    try {
      await proveIdempotency(
        server.baseUrl,
        (key, input) => callJson(`${server.baseUrl}/payments`, key, input),
        'hono',
      );
    } finally {
      await server.stop();
      await database.drop();
    }
  }, 120_000);

  it("a store author's node:test file runs the store contract from the tarball", async () => {
    const database = await createEmptyDatabase('contract');
    try {
      const { stdout } = await run(
        process.execPath,
        ['--test', '--test-reporter=tap', 'drizzle-store.test.js'],
        {
          cwd: path.join(projectDir, 'store-contract'),
          env: consumerEnv({ DATABASE_URL: database.url }),
        },
      );
      // Every case of the contract ran from the tarball and passed.
      const cases = storeContractCases(() => Promise.reject(new Error('not run'))).length;
      expect(stdout).toMatch(new RegExp(`^# pass ${cases}$`, 'm'));
      expect(stdout).toMatch(/^# fail 0$/m);
    } finally {
      await database.drop();
    }
  }, 120_000);

  it('a GraphQL Yoga server with the Envelop plugin', async () => {
    const database = await createEmptyDatabase('yoga');
    const server = await startConsumerServer(
      path.join(projectDir, 'yoga'),
      ['server.js'],
      consumerEnv({
        DATABASE_URL: database.url,
      }),
    );
    try {
      await proveIdempotency(
        server.baseUrl,
        (key, input) => callGraphql(server.baseUrl, key, input),
        'yoga',
      );
    } finally {
      await server.stop();
      await database.drop();
    }
  }, 120_000);

  it('the browser client (`/client`) in plain Node: no framework, one key across retries', async () => {
    const { stdout } = await run(process.execPath, ['check.js'], {
      cwd: path.join(projectDir, 'client'),
      env: consumerEnv(),
    });
    expect(JSON.parse(stdout)).toEqual({
      phase: 'accepted',
      sends: 2,
      oneKey: true,
      locked: true,
      stored: 'accepted',
    });
  }, 60_000);

  describeQuickstarts(() => projectDir);
});

function readdirSql(dir: string): string {
  const files = readdirSync(path.join(dir, 'drizzle')).filter((f) => f.endsWith('.sql'));
  expect(files).toHaveLength(1);
  return files[0]!;
}

async function callTrpc(
  baseUrl: string,
  key: string,
  input: { amount: number; gate?: string },
): Promise<ConsumerAnswer> {
  const response = await fetch(`${baseUrl}/trpc/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(input),
  });
  const body = (await response.json()) as {
    result?: { data: unknown };
    error?: { data?: { idempotency?: { code: string } } };
  };
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    retryAfter: response.headers.get('retry-after'),
    code: body.error?.data?.idempotency?.code,
    data: body.result?.data,
  };
}

/** A route handler or a Server Action behind its test server: JSON in, JSON (or a refusal) out. */
async function callJson(
  url: string,
  key: string,
  input: { amount: number; gate?: string },
): Promise<ConsumerAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(input),
  });
  const body = (await response.json()) as { code?: string };
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    retryAfter: response.headers.get('retry-after'),
    code: response.ok ? undefined : body.code,
    data: response.ok ? body : undefined,
  };
}

async function callGraphql(
  baseUrl: string,
  key: string,
  input: { amount: number; gate?: string },
): Promise<ConsumerAnswer> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({
      query: 'mutation($a: Int!, $g: String) { pay(amount: $a, gate: $g) { paymentId amount } }',
      variables: { a: input.amount, g: input.gate ?? null },
    }),
  });
  const body = (await response.json()) as {
    data?: unknown;
    errors?: { extensions?: { code?: string } }[];
  };
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    retryAfter: response.headers.get('retry-after'),
    code: body.errors?.[0]?.extensions?.code,
    data: body.data,
  };
}
