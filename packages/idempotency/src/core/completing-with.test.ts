import { describe, expect, it } from 'vitest';
import { completingWith } from './completing-with.ts';
import type { Execution } from './execution.ts';

describe('completingWith', () => {
  it('a handler may destructure advance, renew and runPhases: each calls the execution it wraps', async () => {
    const calls: string[] = [];
    const exec = {
      advance: async (_tx: 'tx', point: string) => {
        calls.push(`advance ${point}`);
      },
      renew: async () => {
        calls.push('renew');
      },
      runPhases: async () => {
        calls.push('runPhases');
        return { status: 200, headers: {}, body: null };
      },
    } as unknown as Execution<'tx'>;
    const { advance, renew, runPhases } = completingWith(exec, async () => {});
    await advance('tx', 'charged');
    await renew();
    await runPhases({});
    expect(calls).toEqual(['advance charged', 'renew', 'runPhases']);
  });
});
