import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const processorDir = fileURLToPath(new URL('..', import.meta.url));

describe('processor start-up with windows that do not fit', () => {
  it('refuses a key retention shorter than the key lease in one line, exit 1', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: processorDir,
      env: {
        ...process.env,
        PROCESSOR_DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none',
        PROCESSOR_IDEMPOTENCY_RETENTION_MS: '1000',
        PROCESSOR_IDEMPOTENCY_LEASE_MS: '30000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toEqual([
      'processor: cannot start: PROCESSOR_IDEMPOTENCY_RETENTION_MS (1000) must be greater than PROCESSOR_IDEMPOTENCY_LEASE_MS (30000): a key must outlive the request that holds it.',
    ]);
  }, 60_000);
});
