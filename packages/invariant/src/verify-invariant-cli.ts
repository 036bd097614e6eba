// `npm run verify [-- --converged]`: checks the exactly-once invariant from the app's and
// the processor's databases, prints every violation, exits 1 if there is any.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processorDatabaseUrlFor } from '@once/postgres';
import { demoConnectionFile, readDemoConnection } from './demo-connection.ts';
import { verifyInvariant } from './verify-invariant.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// DATABASE_URL names the databases; without it, the running demo (`npm run demo`, with or
// without --ha) says where its are: its passwords are its own, so nothing here guesses them.
const demo = process.env.DATABASE_URL
  ? undefined
  : readDemoConnection(demoConnectionFile(repoRoot));
const databaseUrl = process.env.DATABASE_URL || demo?.databaseUrl;
if (!databaseUrl) {
  console.error(
    'verify: no demo is running (npm run demo says where its databases are while it runs). Start the demo first (npm run demo), or set DATABASE_URL and PROCESSOR_DATABASE_URL.',
  );
  // 2, not 1: nothing was checked, which is not the same as a violation found.
  process.exit(2);
}
const processorDatabaseUrl =
  process.env.PROCESSOR_DATABASE_URL ||
  demo?.processorDatabaseUrl ||
  processorDatabaseUrlFor(databaseUrl);
const converged = process.argv.includes('--converged');

/** Where a URL points, without its password: `127.0.0.1:25432/once`. */
function place(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured database';
  }
}

/**
 * The one line to print when the databases cannot be read: the usual cause is that the demo
 * stopped, and a stack trace would hide what to do about it.
 */
function cannotRead(error: unknown, where: string): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT') {
    return `verify: no database answers at ${where}. Start the demo first (npm run demo), or set DATABASE_URL and PROCESSOR_DATABASE_URL.`;
  }
  if (code === '3D000') {
    return `verify: a database is missing (${where} or its processor database). Start the demo once (npm run demo), or set DATABASE_URL and PROCESSOR_DATABASE_URL.`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return `verify: could not read the databases at ${where}: ${message}`;
}

const report = await verifyInvariant({
  databaseUrl,
  processorDatabaseUrl,
  converged,
}).catch((error: unknown) => {
  console.error(cannotRead(error, place(databaseUrl)));
  process.exit(2);
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
