import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { controlPart } from './target.ts';

/** The process's state letter from /proc: S sleeping, T stopped. */
const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];

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
    await sleep(50);
    expect(stateOf(first)).toBe('T');
    await part.resume();
    await sleep(50);
    expect(stateOf(first)).toBe('S');
    const exited = new Promise((resolve) => child.once('exit', (_, signal) => resolve(signal)));
    await part.kill();
    expect(await exited).toBe('SIGKILL');
    await part.restart();
    expect(starts).toEqual([child.pid]);
    process.kill(-child.pid!, 'SIGKILL');
  });
});
