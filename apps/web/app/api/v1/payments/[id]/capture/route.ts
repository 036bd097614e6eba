import { createPaymentCaptureHandler } from '@/server/payment-actions-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const capture = createPaymentCaptureHandler(getWebRuntime);

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return capture(request, (await params).id);
}
