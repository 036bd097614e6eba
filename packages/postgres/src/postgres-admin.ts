import net from 'node:net';
import postgres from 'postgres';

/** Creates `database` if it does not exist. Safe when several processes race to do it. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) {
    throw new Error(`refusing to create database with unsafe name ${JSON.stringify(database)}`);
  }
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`;
    if (rows.length > 0) return;
    await sql.unsafe(`create database ${database}`).catch((error: { code?: string }) => {
      // 42P04 duplicate_database / 23505: another process created it first.
      if (error.code !== '42P04' && error.code !== '23505') throw error;
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Where {@link findFreePort} looks: below Linux's ephemeral range (32768+). */
interface FreePortOptions {
  /** How many consecutive ports must be free; the first is returned. Default 1. */
  count?: number;
  min?: number;
  /** Exclusive. */
  max?: number;
}

/** The first of `count` consecutive free TCP ports (a system's worker health ports). */
export async function findFreePort(options: FreePortOptions = {}): Promise<number> {
  const { count = 1, min = 20000, max = 32000 } = options;
  const candidates = max - min - count + 1;
  if (!Number.isInteger(count) || count < 1 || candidates < 1) {
    throw new Error(`cannot fit ${count} consecutive ports between ${min} and ${max}`);
  }
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = min + Math.floor(Math.random() * candidates);
    if (await allPortsFree(first, count)) return first;
  }
  throw new Error(`no ${count} consecutive free TCP ports found between ${min} and ${max}`);
}

async function allPortsFree(first: number, count: number): Promise<boolean> {
  for (let port = first; port < first + count; port++) {
    if (!(await isPortFree(port))) return false;
  }
  return true;
}

/** Whether nothing listens on `port` on 127.0.0.1 (a listen attempt, closed at once). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The processor's own database next to the app's: `<database>_processor` on the same server. */
export function processorDatabaseUrlFor(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${url.pathname.slice(1) || 'postgres'}_processor`;
  return url.toString();
}
