import { createProcessorWebhookHandler } from '@/server/processor-webhook';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const POST = createProcessorWebhookHandler(getWebRuntime);
