import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packageDir, repoRoot, run } from './build-and-pack.ts';

/** The fixtures copied into the consumer project (one folder per consumer app). */
const fixtures = path.join(packageDir, 'packaging/consumers');

/** What a consumer project installs besides the tarball, at the versions this repo locks. */
const PEERS = [
  'drizzle-orm',
  'drizzle-kit',
  'postgres',
  '@trpc/server',
  'next',
  'react',
  'react-dom',
  'graphql',
  'graphql-yoga',
  'hono',
  '@hono/node-server',
  // The quickstarts (docs/quickstart-*.md): their client, input validation and types.
  '@trpc/client',
  'zod',
  '@types/node',
  '@types/react',
  '@types/react-dom',
  // `next build` type-checks a TypeScript app with the project's own compiler.
  'typescript',
];

/**
 * The environment a consumer's processes get: the monorepo's `@once/source` condition must not
 * leak in (it would load the tarball's TypeScript sources instead of its build).
 */
export function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _dropped, ...env } = process.env;
  return { ...env, NEXT_TELEMETRY_DISABLED: '1', ...extra };
}

async function lockedVersion(name: string): Promise<string> {
  const lock = JSON.parse(await readFile(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  // Hoisted to the root, or kept in this package's own node_modules when npm could not hoist it.
  const version = (
    lock.packages[`node_modules/${name}`] ??
    lock.packages[`packages/idempotency/node_modules/${name}`]
  )?.version;
  if (!version) throw new Error(`${name} is not in the repo's package-lock.json`);
  return version;
}

/**
 * A fresh project outside the workspace with the tarball and its peers installed by a real
 * `npm install` (from npm's cache when it can: `--prefer-offline`), and the consumer fixtures
 * copied in. One install serves every consumer app.
 */
export async function createConsumerProject(dir: string, tarball: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const dependencies: Record<string, string> = { '@once/idempotency': `file:${tarball}` };
  for (const name of PEERS) dependencies[name] = await lockedVersion(name);
  await writeFile(
    path.join(dir, 'package.json'),
    // `workspaces` marks this folder as the project's root, as a lockfile or a monorepo's
    // manifest does in a real one (this install writes no lockfile): Turbopack then reads
    // node_modules here when `next build` runs in a subfolder (quickstart-tests.ts).
    JSON.stringify({
      name: 'once-consumers',
      private: true,
      type: 'module',
      workspaces: [],
      dependencies,
    }),
  );
  await cp(fixtures, dir, { recursive: true });
  await run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
      '--loglevel=error',
    ],
    { cwd: dir, env: consumerEnv(), maxBuffer: 16 * 1024 * 1024 },
  );
}
