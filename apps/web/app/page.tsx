import { CheckoutPage } from '../src/components/checkout/checkout-page.tsx';
import { listMerchants } from '../src/server/merchants.ts';

export const dynamic = 'force-dynamic';

export default async function HomePage() {
  const merchants = await listMerchants();
  return (
    <main>
      <div className="page-head">
        <h1>Checkout</h1>
        <p className="lede">Charged exactly once, whatever the network does.</p>
      </div>
      <CheckoutPage merchants={merchants} />
    </main>
  );
}
