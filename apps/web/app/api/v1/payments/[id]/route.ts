import { createPaymentGetHandler } from '@/server/payments-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const getPayment = createPaymentGetHandler(getWebRuntime);

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return getPayment(request, (await params).id);
}
