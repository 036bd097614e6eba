import { demoTenants } from '@once/db/seed';
import { CheckoutPage } from '../src/components/checkout/checkout-page.tsx';

export const dynamic = 'force-dynamic';

export default function HomePage() {
  // Only ids and names reach the browser: the demo API keys stay on the server.
  const merchants = demoTenants.map((tenant) => ({ id: tenant.id, name: tenant.name }));
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
