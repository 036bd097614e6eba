import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { controlPart } from './target.ts';

/** The process's state letter from /proc (S sleeping, T stopped), once it is `want` or 2 s on. */
async function stateOf(pid: number, want: string): Promise<string | undefined> {
  let state: string | undefined;
  for (let waited = 0; waited < 2_000 && state !== want; waited += 20) {
    await sleep(20);
    state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];
  }
  return state;
}

describe('controlPart, a process group by pid', () => {
  it('pauses, resumes, kills and starts it again', async () => {
    const starts: number[] = [];
    let child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const part = controlPart({
      pid: () => child.pid!,
      start: async () => {
        child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
        starts.push(child.pid!);
      },
    });
    const first = child.pid!;
    await part.pause();
    expect(await stateOf(first, 'T')).toBe('T');
    await part.resume();
    expect(await stateOf(first, 'S')).toBe('S');
    const exited = new Promise((resolve) => child.once('exit', (_, signal) => resolve(signal)));
    await part.kill();
    expect(await exited).toBe('SIGKILL');
    await part.restart();
    expect(starts).toEqual([child.pid]);
    process.kill(-child.pid!, 'SIGKILL');
  });
});
