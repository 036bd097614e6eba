import { createOpenApiHandler } from '@/server/openapi';

export const runtime = 'nodejs';

export const GET = createOpenApiHandler();
