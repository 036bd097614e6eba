import { PaymentTimelineView } from '../../../../src/components/ops/timeline/payment-timeline-view.tsx';
import { listMerchants } from '../../../../src/server/merchants.ts';

export const dynamic = 'force-dynamic';

export default async function PaymentTimelinePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const merchants = await listMerchants();
  return (
    <main className="wide">
      <h1>The life of a payment</h1>
      <PaymentTimelineView paymentId={decodeURIComponent(id)} merchants={merchants} />
    </main>
  );
}
