import { describe, expect, it } from 'vitest';
import { runEntry } from './support/run-entry.ts';

describe('a bad bind address stops an app at start with one line', () => {
  it('processor: HOST=processor (a name) is refused before anything else', async () => {
    const { code, stderr } = await runEntry('apps/processor/src/main.ts', {
      HOST: 'processor',
      PROCESSOR_DATABASE_URL: 'postgres://127.0.0.1:1/unused',
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(
      /^processor: cannot start: HOST must be an IP address .*"processor"$/,
    );
  });

  it('web: HOST=web is refused before Next is loaded', async () => {
    const { code, stderr } = await runEntry('apps/web/src/process/main.ts', { HOST: 'web' });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(/^web: cannot start: HOST must be an IP address .*"web"$/);
  });
});
