import { demoTenants } from '@once/db/seed';
import { OpsCockpit } from '../../src/components/ops/ops-cockpit.tsx';

export const dynamic = 'force-dynamic';

export default function OpsPage() {
  const merchants = demoTenants.map((tenant) => ({ id: tenant.id, name: tenant.name }));
  return (
    <main className="wide">
      <div className="page-head">
        <h1>Operator cockpit</h1>
        <p className="lede">Every payment, and whether the processor charged it exactly once.</p>
      </div>
      <OpsCockpit merchants={merchants} />
    </main>
  );
}
