import { getWebRuntime } from '@/server/runtime';
import { createTrpcHandler } from '@/server/trpc-handler';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handler = createTrpcHandler(getWebRuntime);

export { handler as GET, handler as POST };
