// `npm run verify [-- --converged]`: checks the exactly-once invariant from the app's and
// the processor's databases, prints every violation, exits 1 if there is any.
import { requireDatabaseUrl } from '@once/db';
import { verifyInvariant } from './verify-invariant.ts';

const processorDatabaseUrl = process.env.PROCESSOR_DATABASE_URL;
if (!processorDatabaseUrl) {
  console.error("PROCESSOR_DATABASE_URL is not set: point it at the processor's own database.");
  process.exit(2);
}
const converged = process.argv.includes('--converged');

const report = await verifyInvariant({
  databaseUrl: requireDatabaseUrl(),
  processorDatabaseUrl,
  converged,
});
for (const violation of report.violations) {
  console.log(
    `VIOLATION ${violation.kind} tenant=${violation.tenantId}` +
      `${violation.paymentId ? ` payment=${violation.paymentId}` : ''}: ${violation.detail}`,
  );
}
console.log(
  `${report.violations.length === 0 ? 'OK' : 'FAILED'}: ${report.payments} payments, ` +
    `${report.ledgerCharges} ledger charges, ${report.violations.length} violations` +
    `${converged ? ' (converged)' : ''}`,
);
process.exit(report.violations.length === 0 ? 0 : 1);
