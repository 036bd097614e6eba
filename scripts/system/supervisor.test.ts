import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isProcessAlive } from '../../packages/db/src/process-alive.ts';
import { Supervisor } from './supervisor.ts';

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
});
