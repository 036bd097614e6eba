import { CheckoutPage } from '../../../src/components/checkout/checkout-page.tsx';
import { listMerchants } from '../../../src/server/merchants.ts';

export const dynamic = 'force-dynamic';

/**
 * Where the processor sends the shopper back after the bank's 3-D Secure page (the worker's
 * `return_url`). The checkout comes back from storage: its intent, its Idempotency-Key and
 * the payment it made. The query the processor appends (`payment_intent`,
 * `redirect_status`, ...) is never read: the outcome is the processor's, learned by the server.
 */
export default async function CheckoutReturnPage() {
  const merchants = await listMerchants();
  return (
    <main>
      <div className="page-head">
        <h1>Checkout</h1>
        <p className="lede">Back from your bank.</p>
      </div>
      <CheckoutPage merchants={merchants} returnedFromBank />
    </main>
  );
}
