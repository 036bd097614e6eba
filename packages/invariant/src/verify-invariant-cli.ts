// `npm run verify [-- --converged]`: checks the exactly-once invariant from the app's and
// the processor's databases, prints every violation, exits 1 if there is any.
import { processorDatabaseUrlFor } from '@once/postgres';
import { verifyInvariant } from './verify-invariant.ts';

// Defaults match `npm run demo`: its embedded PostgreSQL, and the processor's database
// named like the launcher names it (`<database>_processor` on the same server).
const databaseUrl =
  process.env.DATABASE_URL ||
  `postgres://postgres:password@127.0.0.1:${process.env.ONCE_PG_PORT ?? 25432}/once`;
const processorDatabaseUrl =
  process.env.PROCESSOR_DATABASE_URL || processorDatabaseUrlFor(databaseUrl);
const converged = process.argv.includes('--converged');

const report = await verifyInvariant({
  databaseUrl,
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
