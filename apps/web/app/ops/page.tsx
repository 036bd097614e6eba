import { OpsCockpit } from '../../src/components/ops/ops-cockpit.tsx';
import { listMerchants } from '../../src/server/merchants.ts';

export const dynamic = 'force-dynamic';

export default async function OpsPage() {
  const merchants = await listMerchants();
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
