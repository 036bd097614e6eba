import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from '@once/postgres';
import { describe, expect, it } from 'vitest';
import { StartupError, Supervisor } from './supervisor.ts';

const fixture = fileURLToPath(new URL('./testing/launcher-fixture.ts', import.meta.url));

async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !condition()) await new Promise((r) => setTimeout(r, 100));
  return condition();
}

describe('Supervisor', () => {
  it('leaves no child behind when the launcher itself is SIGKILLed', async () => {
    const launcher = spawn(process.execPath, ['--import', 'tsx', fixture], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pids = await new Promise<number[]>((resolve, reject) => {
      createInterface({ input: launcher.stdout! }).on('line', (line) => {
        if (line.startsWith('PIDS ')) resolve(line.slice(5).split(' ').map(Number));
      });
      launcher.once('exit', (code) => reject(new Error(`launcher exited with ${code}`)));
    });
    expect(pids).toHaveLength(2);
    expect(pids.every(isProcessAlive)).toBe(true);

    launcher.kill('SIGKILL');
    expect(
      await waitUntil(() => !pids.some(isProcessAlive)),
      `still running: ${pids.filter(isProcessAlive)}`,
    ).toBe(true);
  }, 30_000);

  it('stops processes last-started first and reports an unexpected exit', async () => {
    const order: string[] = [];
    const unexpected: string[] = [];
    const supervisor = new Supervisor(
      (line) => {
        const match = line.match(/^(\w+)\s*\| stopping$/);
        if (match) order.push(match[1]!);
      },
      (name) => unexpected.push(name),
    );
    const script =
      'console.log("ready"); process.on("SIGTERM", () => { console.log("stopping"); setTimeout(() => process.exit(0), 50); }); setInterval(() => {}, 1000)';
    for (const name of ['database', 'app']) {
      await supervisor.start({
        name,
        command: process.execPath,
        args: ['-e', script],
        readyLine: /^ready$/,
      });
    }
    await supervisor.start({
      name: 'crasher',
      command: process.execPath,
      args: ['-e', 'console.log("ready"); setTimeout(() => process.exit(3), 100)'],
      readyLine: /^ready$/,
    });
    expect(await waitUntil(() => unexpected.length > 0)).toBe(true);
    expect(unexpected).toEqual(['crasher']);
    await supervisor.stopAll();
    expect(order).toEqual(['app', 'database']);
  }, 30_000);

  it('restarts a SIGKILLed part with backoff and logs it; stopAll leaves nothing behind', async () => {
    const lines: string[] = [];
    const supervisor = new Supervisor((line) => lines.push(line), undefined, {
      restart: {
        initialDelayMs: 200,
        maxDelayMs: 1_000,
        maxRestarts: 5,
        windowMs: 10_000,
        resetAfterMs: 5_000,
      },
    });
    const first = await supervisor.start({
      name: 'part',
      command: process.execPath,
      args: ['-e', 'console.log("ready " + process.pid); setInterval(() => {}, 1000)'],
      readyLine: /^ready (\d+)$/,
    });
    const firstPid = first.child.pid!;
    process.kill(firstPid, 'SIGKILL');
    expect(
      await waitUntil(() => lines.filter((l) => /^part\s*\| ready \d+$/.test(l)).length === 2),
      lines.join('\n'),
    ).toBe(true);
    expect(lines.join('\n')).toMatch(
      /part\s*\| exited with signal SIGKILL; restarting in 0\.2 s \(restart 1 of at most 5 within 10 s\)/,
    );
    expect(
      await waitUntil(() => lines.some((l) => /part\s*\| restarted \(pid \d+\)/.test(l))),
    ).toBe(true);
    const secondPid = Number(
      lines
        .filter((l) => / ready /.test(l))
        .at(-1)!
        .split(' ')
        .at(-1),
    );
    expect(secondPid).not.toBe(firstPid);
    expect(isProcessAlive(secondPid)).toBe(true);
    expect(supervisor.names).toEqual(['part']);

    await supervisor.stopAll();
    expect(isProcessAlive(secondPid)).toBe(false);
  }, 30_000);

  it('lists the parts in start order while one of them restarts, and counts its restart', async () => {
    const supervisor = new Supervisor(() => {}, undefined, {
      // A long first backoff: the killed part stays between its crash and its restart.
      restart: {
        initialDelayMs: 60_000,
        maxDelayMs: 60_000,
        maxRestarts: 5,
        windowMs: 10_000,
        resetAfterMs: 5_000,
      },
    });
    const script = 'console.log("ready"); setInterval(() => {}, 1000)';
    for (const name of ['postgres', 'worker-1', 'web']) {
      await supervisor.start({
        name,
        command: process.execPath,
        args: ['-e', script],
        readyLine: /^ready$/,
      });
    }
    supervisor.killForRestart('worker-1');
    expect(await waitUntil(() => supervisor.status().some((p) => p.state === 'restarting'))).toBe(
      true,
    );
    expect(supervisor.status().map((p) => `${p.name} ${p.state} ${p.restarts}`)).toEqual([
      'postgres up 0',
      'worker-1 restarting 1',
      'web up 0',
    ]);
    await supervisor.stopAll();
  }, 30_000);

  it('gives up on a crash loop with one clear message', async () => {
    const lines: string[] = [];
    const gaveUp: string[] = [];
    const supervisor = new Supervisor(
      (line) => lines.push(line),
      (_name, _code, reason) => gaveUp.push(reason),
      {
        restart: {
          initialDelayMs: 50,
          maxDelayMs: 100,
          maxRestarts: 3,
          windowMs: 30_000,
          resetAfterMs: 30_000,
        },
      },
    );
    // Ready at once, then dies 150 ms later, every time.
    await supervisor.start({
      name: 'crasher',
      command: process.execPath,
      args: ['-e', 'console.log("ready"); setTimeout(() => process.exit(3), 150)'],
      readyLine: /^ready$/,
    });
    expect(await waitUntil(() => gaveUp.length > 0), lines.join('\n')).toBe(true);
    expect(lines.filter((l) => /restarting in/.test(l))).toHaveLength(3);
    expect(gaveUp).toEqual([
      'crasher exited 4 times within 30 s (last: code 3): a crash loop, so it is not restarted again; its last lines are above, fix the cause and start again',
    ]);
    expect(supervisor.names).toEqual([]);
    await supervisor.stopAll();
  }, 30_000);

  it('a part that says why it cannot start fails with that one line', async () => {
    const supervisor = new Supervisor(() => {});
    const error = await supervisor
      .start({
        name: 'db',
        command: process.execPath,
        args: [
          '-e',
          'console.log("POSTGRES_FAILED port 1 is taken: pick another"); process.exit(1)',
        ],
        readyLine: /^POSTGRES_READY/,
        failLine: /^POSTGRES_FAILED (.*)$/,
      })
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toBe('port 1 is taken: pick another');
    await supervisor.stopAll();
  });

  it('a first start that fails leaves no entry, so the name finds the next live part', async () => {
    const supervisor = new Supervisor(() => {});
    const failed = await supervisor
      .start({
        name: 'part',
        command: process.execPath,
        args: ['-e', 'process.exit(1)'],
        readyLine: /^ready$/,
      })
      .catch((e: Error) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(supervisor.names).toEqual([]);
    const live = await supervisor.start({
      name: 'part',
      command: process.execPath,
      args: ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'],
      readyLine: /^ready$/,
    });
    await supervisor.kill('part');
    expect(isProcessAlive(live.child.pid!)).toBe(false);
    expect(supervisor.names).toEqual([]);
    await supervisor.stopAll();
  });
});
