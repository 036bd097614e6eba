import {
  createPaymentRefundHandler,
  createPaymentRefundsGetHandler,
} from '@/server/payment-actions-api';
import { getWebRuntime } from '@/server/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const refund = createPaymentRefundHandler(getWebRuntime);
const listRefunds = createPaymentRefundsGetHandler(getWebRuntime);

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return refund(request, (await params).id);
}

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return listRefunds(request, (await params).id);
}
