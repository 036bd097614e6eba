import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedAdminUrl } from './embedded-postgres-password.ts';
import { findFreePort } from './postgres-admin.ts';
import { isProcessAlive } from './process-alive.ts';

const processScript = fileURLToPath(new URL('./embedded-postgres-process.ts', import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

function startProcess(
  dataDir: string,
  port: number,
): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      processScript,
      '--data-dir',
      dataDir,
      '--port',
      String(port),
      '--durability',
      'fast',
      '--database',
      'demo',
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  children.push(child);
  const ready = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = line.match(/^POSTGRES_READY (\S+)$/);
      // Printed with the password masked; it is read from the data directory.
      if (match) resolve(embeddedAdminUrl(match[1]!, dataDir));
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before ready`)));
  });
  return { child, ready };
}

const postmasterPid = (dataDir: string) =>
  Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);

async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

describe('embedded PostgreSQL process', () => {
  it('leaves no server behind when its launcher is SIGKILLed, and restarts on the same data', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-pg-orphan-'));
    dirs.push(dataDir);
    const port = await findFreePort();

    const first = startProcess(dataDir, port);
    const adminUrl = await first.ready;
    const sql = postgres(adminUrl.replace(/\/postgres$/, '/demo'), { max: 1, onnotice: () => {} });
    await sql`create table survives (id int)`;
    await sql`insert into survives values (42)`;
    await sql.end();
    const pid = postmasterPid(dataDir);
    expect(isProcessAlive(pid)).toBe(true);

    first.child.kill('SIGKILL');
    expect(
      await waitFor(() => !isProcessAlive(pid)),
      'postmaster still running after its launcher died',
    ).toBe(true);
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);

    const second = startProcess(dataDir, port);
    const again = postgres((await second.ready).replace(/\/postgres$/, '/demo'), {
      max: 1,
      onnotice: () => {},
    });
    expect(await again`select id from survives`).toEqual([{ id: 42 }]);

    // A second starter on the same data directory must not take the running server down.
    const intruder = startProcess(dataDir, await findFreePort());
    await expect(intruder.ready).rejects.toThrow(/exited/);
    expect(await again`select id from survives`).toEqual([{ id: 42 }]);
    await again.end();
    const secondPid = postmasterPid(dataDir);
    second.child.kill('SIGTERM');
    expect(await waitFor(() => !isProcessAlive(secondPid)), 'SIGTERM did not stop the server').toBe(
      true,
    );
  }, 60_000);

  // What the OOM killer does: SIGKILL of the postmaster alone. Its wrapper used to keep
  // running with nothing to wrap, so the launcher never restarted the database part.
  it('exits non-zero when its server dies alone (kill -9 of the postmaster), so it is restarted; the next start serves the same data', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-pg-postmaster-'));
    dirs.push(dataDir);
    const port = await findFreePort();

    const first = startProcess(dataDir, port);
    const sql = postgres((await first.ready).replace(/\/postgres$/, '/demo'), {
      max: 1,
      onnotice: () => {},
    });
    await sql`create table survives (id int)`;
    await sql`insert into survives values (7)`;
    // `fast` durability (synchronous_commit off) may lose the last commits in a crash: written
    // out first, so this test is about the restart, not about those settings.
    await sql`checkpoint`;
    // A backend in a CPU-bound loop notices its postmaster's death only when it next waits,
    // here never (its statement_timeout, which needs no postmaster, bounds it at 60 s). Left
    // attached to the old shared memory, it makes PostgreSQL refuse the next start.
    const busy = postgres((await first.ready).replace(/\/postgres$/, '/demo'), {
      max: 1,
      onnotice: () => {},
      connection: { application_name: 'busy', statement_timeout: 60_000 },
    });
    const looping = busy`do $$ begin loop end loop; end $$`.catch(() => 'ended');
    expect(
      await waitFor(
        async () =>
          (
            await sql`select 1 from pg_stat_activity
            where application_name = 'busy' and state = 'active'`
          ).length === 1,
      ),
    ).toBe(true);
    await sql.end();
    const exited = new Promise<number | null>((resolve) =>
      first.child.once('exit', (code) => resolve(code)),
    );

    process.kill(postmasterPid(dataDir), 'SIGKILL');
    const code = await Promise.race([
      exited,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 10_000)),
    ]);
    expect(code, 'the wrapper kept running after its server died').toBe(1);

    // What the supervisor does next: start the same part again, on the same data and port.
    // One start: it stops the orphaned backend first.
    const second = startProcess(dataDir, port);
    const adminUrl = await second.ready;
    expect(await looping).toBe('ended');
    await busy.end({ timeout: 0 });
    const again = postgres(adminUrl.replace(/\/postgres$/, '/demo'), {
      max: 1,
      onnotice: () => {},
    });
    expect(await again`select id from survives`).toEqual([{ id: 7 }]);
    await again.end();
    const secondPid = postmasterPid(dataDir);
    second.child.kill('SIGTERM');
    expect(await waitFor(() => !isProcessAlive(secondPid)), 'SIGTERM did not stop the server').toBe(
      true,
    );
  }, 90_000);
});
