import { createGraphqlHandler } from '@/server/graphql-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handler = createGraphqlHandler(getWebRuntime);

export { handler as GET, handler as POST };
