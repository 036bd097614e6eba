import { createPaymentCancelHandler } from '@/server/payment-actions-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const cancel = createPaymentCancelHandler(getWebRuntime);

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return cancel(request, (await params).id);
}
