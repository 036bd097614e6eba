import { afterEach, describe, expect, it } from 'vitest';
import { type ChaosControl, startChaosControl } from './chaos-control.ts';
import { type ClusterControl, ClusterNotReady } from './cluster-parts.ts';
import { Supervisor } from './supervisor.ts';

/**
 * The launcher's control channel over real HTTP, acting on real child processes: presses are
 * not crashes, are bounded in rate, and cannot keep the workers stopped.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !condition()) await sleep(50);
  return condition();
}

let supervisor: Supervisor;
let control: ChaosControl;
const gaveUp: string[] = [];

async function startParts(options: {
  pauseMs?: number;
  cooldownMs?: Parameters<typeof startChaosControl>[0]['cooldownMs'];
  workers?: number;
  cluster?: ClusterControl;
  /** More parts by name (`web-1`, `proxy`, ...), each a process that idles. */
  others?: string[];
}) {
  gaveUp.length = 0;
  supervisor = new Supervisor(
    () => {},
    (_name, _code, reason) => gaveUp.push(reason),
    {
      // The demo's budget, tighter: a third crash within the minute is a crash loop.
      restart: {
        initialDelayMs: 100,
        maxDelayMs: 400,
        maxRestarts: 2,
        windowMs: 60_000,
        resetAfterMs: 60_000,
      },
    },
  );
  for (let i = 1; i <= (options.workers ?? 1); i++) {
    await supervisor.start({
      name: `worker-${i}`,
      command: process.execPath,
      args: ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'],
      readyLine: /^ready$/,
    });
  }
  for (const name of options.others ?? []) {
    await supervisor.start({
      name,
      command: process.execPath,
      args: ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'],
      readyLine: /^ready$/,
    });
  }
  control = await startChaosControl({
    supervisor,
    pauseMs: options.pauseMs ?? 10_000,
    killWebDelayMs: 0,
    log: () => {},
    ...(options.cooldownMs ? { cooldownMs: options.cooldownMs } : {}),
    ...(options.cluster ? { cluster: options.cluster } : {}),
  });
}

afterEach(async () => {
  await control?.close();
  await supervisor?.stopAll();
});

async function press(name: string) {
  const response = await fetch(`${control.url}/switches/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${control.secret}` },
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as { did?: string; error?: string; retryAfterSeconds?: number },
  };
}

const part = (name: string) => supervisor.status().find((p) => p.name === name);
async function switches() {
  const response = await fetch(`${control.url}/switches`, {
    headers: { authorization: `Bearer ${control.secret}` },
  });
  return ((await response.json()) as { switches: string[] }).switches;
}
async function partState(name: string) {
  const response = await fetch(`${control.url}/parts`, {
    headers: { authorization: `Bearer ${control.secret}` },
  });
  const { parts } = (await response.json()) as { parts: { name: string; state: string }[] };
  return parts.find((p) => p.name === name)?.state;
}

describe('the launcher control channel', () => {
  it('six kill_worker presses within a minute are no crash loop; real crashes still are', async () => {
    await startParts({ cooldownMs: { kill_worker: 0 } });
    for (let i = 1; i <= 6; i++) {
      const answer = await press('kill_worker');
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(
        await waitUntil(() => part('worker-1')?.state === 'up' && part('worker-1')?.restarts === i),
        JSON.stringify(supervisor.status()),
      ).toBe(true);
    }
    expect(gaveUp).toEqual([]);
    // The crash-loop budget is whole: two crashes are restarted, the third is a loop.
    for (let crash = 1; crash <= 3; crash++) {
      const pid = part('worker-1')!.pid!;
      process.kill(pid, 'SIGKILL');
      if (crash < 3) {
        expect(
          await waitUntil(() => part('worker-1')?.state === 'up' && part('worker-1')?.pid !== pid),
        ).toBe(true);
      }
    }
    expect(await waitUntil(() => gaveUp.length > 0)).toBe(true);
    expect(gaveUp[0]).toMatch(/^worker-1 exited 3 times within 60 s/);
  }, 60_000);

  it('a second press of a switch within its cooldown is 429 + Retry-After and kills nothing', async () => {
    await startParts({});
    expect((await press('kill_worker')).status).toBe(200);
    expect(
      await waitUntil(() => part('worker-1')?.state === 'up' && part('worker-1')?.restarts === 1),
    ).toBe(true);
    const pid = part('worker-1')!.pid;
    const again = await press('kill_worker');
    expect(again.status).toBe(429);
    expect(again.body.error).toMatch(/kill_worker was pressed moments ago/);
    expect(Number(again.retryAfter)).toBeGreaterThan(0);
    expect(Number(again.retryAfter)).toBeLessThanOrEqual(10);
    await sleep(300);
    expect(part('worker-1')).toMatchObject({ state: 'up', pid, restarts: 1 });
  }, 30_000);

  it('pause: one worker at a time, over by itself, and the next pause waits as long again', async () => {
    await startParts({ pauseMs: 600, cooldownMs: { pause_worker: 0 }, workers: 2 });
    const first = await press('pause_worker');
    expect(first.status).toBe(200);
    expect(first.body.did).toMatch(/^worker-1 \(pid \d+\) paused with SIGSTOP/);
    // Presses cannot stop the other worker too: one always runs.
    const second = await press('pause_worker');
    expect(second.status).toBe(429);
    expect(await partState('worker-1')).toBe('paused');
    expect(await partState('worker-2')).toBe('up');
    // It ends by itself; the worker then runs at least as long as it was stopped.
    await sleep(700);
    expect(await partState('worker-1')).toBe('up');
    expect((await press('pause_worker')).status).toBe(429);
    await sleep(1_300 - 700);
    expect((await press('pause_worker')).status).toBe(200);
    expect(gaveUp).toEqual([]);
  }, 30_000);

  it('on a replicated cluster: its nodes are parts with their role, and it fails over instead of crash-restarting', async () => {
    let ready = true;
    const failovers: string[] = [];
    await startParts({
      cooldownMs: { db_failover: 0 },
      cluster: {
        parts: async () => [
          { name: 'pg1', state: 'up', restarts: 0, role: 'primary' },
          { name: 'pg2', state: 'up', restarts: 0, role: 'synchronous standby' },
        ],
        failover: async () => {
          if (!ready) throw new ClusterNotReady('no synchronous standby yet');
          failovers.push('pg1');
          return 'pg1 (the primary) killed with SIGKILL';
        },
      },
    });
    expect(await switches()).toContain('db_failover');
    expect(await switches()).not.toContain('pg_crash_restart');
    const response = await fetch(`${control.url}/parts`, {
      headers: { authorization: `Bearer ${control.secret}` },
    });
    const { parts } = (await response.json()) as { parts: { name: string; role?: string }[] };
    expect(parts.map((p) => [p.name, p.role])).toEqual([
      ['pg1', 'primary'],
      ['pg2', 'synchronous standby'],
      ['worker-1', undefined],
    ]);
    expect(await press('db_failover')).toMatchObject({
      status: 200,
      body: { did: 'pg1 (the primary) killed with SIGKILL' },
    });
    ready = false;
    expect(await press('db_failover')).toMatchObject({
      status: 409,
      body: { error: 'no synchronous standby yet' },
    });
    expect(failovers).toEqual(['pg1']);
  }, 30_000);

  it('behind the proxy: kill_web kills one of the webs (the first up), never the proxy or the pooler; they show what they are', async () => {
    await startParts({ others: ['pooler', 'web-1', 'web-2', 'proxy'] });
    const pid = part('web-1')!.pid;
    const pressed = await press('kill_web');
    expect(pressed.status).toBe(200);
    expect(pressed.body.did).toMatch(/^web-1 \(pid \d+\) is killed/);
    expect(await waitUntil(() => part('web-1')?.pid !== pid && part('web-1')?.state === 'up')).toBe(
      true,
    );
    expect(part('web-2')!.restarts + part('proxy')!.restarts + part('pooler')!.restarts).toBe(0);
    const response = await fetch(`${control.url}/parts`, {
      headers: { authorization: `Bearer ${control.secret}` },
    });
    const { parts } = (await response.json()) as { parts: { name: string; role?: string }[] };
    expect(parts.map((p) => [p.name, p.role])).toEqual([
      ['worker-1', undefined],
      ['pooler', 'PgBouncer, transaction mode'],
      ['web-1', undefined],
      ['web-2', undefined],
      ['proxy', 'HAProxy, the public URL'],
    ]);
  });

  it('without a cluster, no failover is offered, and a press of it is refused', async () => {
    await startParts({});
    expect(await switches()).toContain('pg_crash_restart');
    expect(await switches()).not.toContain('db_failover');
    expect(await press('db_failover')).toMatchObject({
      status: 409,
      body: { error: 'no replicated cluster (start the demo with --ha)' },
    });
  }, 30_000);
});
