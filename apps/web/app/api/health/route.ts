import { createHealthHandler } from '@/server/health';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const GET = createHealthHandler(getWebRuntime);
