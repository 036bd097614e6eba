import { demoTenants } from '@once/db/seed';
import { CheckoutPage } from '../src/components/checkout/checkout-page.tsx';

export const dynamic = 'force-dynamic';

export default function HomePage() {
  // Only ids and names reach the browser: the demo API keys stay on the server.
  const merchants = demoTenants.map((tenant) => ({ id: tenant.id, name: tenant.name }));
  return (
    <main>
      <h1>Once</h1>
      <p className="muted">A checkout that charges exactly once over an unreliable network.</p>
      <CheckoutPage merchants={merchants} />
    </main>
  );
}
