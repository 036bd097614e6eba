import { createPaymentsPostHandler } from '@/server/payments-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const POST = createPaymentsPostHandler(getWebRuntime);
