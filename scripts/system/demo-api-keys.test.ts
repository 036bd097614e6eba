import { readFileSync } from 'node:fs';
import { DEMO_API_KEY_VARIABLES, KNOWN_DEMO_SECRETS } from '@once/env';
import { describe, expect, it } from 'vitest';
import { demoApiKeysForRun } from './demo-api-keys.ts';

describe('npm run demo: the merchants’ API keys are made for the run', () => {
  it('each run makes keys of its own, none of them written in the repository', () => {
    const first = demoApiKeysForRun({});
    const second = demoApiKeysForRun({});
    expect(Object.keys(first).sort()).toEqual([...DEMO_API_KEY_VARIABLES].sort());
    for (const variable of DEMO_API_KEY_VARIABLES) {
      expect(first[variable]).toMatch(/^once_demo_[\w-]{32}$/);
      expect(first[variable]).not.toBe(second[variable]);
      expect(KNOWN_DEMO_SECRETS).not.toContain(first[variable]);
      expect(readFileSync(new URL('../../README.md', import.meta.url), 'utf8')).not.toContain(
        first[variable],
      );
    }
    expect(first.ONCE_DEMO_API_KEY_TENANT_A).not.toBe(first.ONCE_DEMO_API_KEY_TENANT_B);
  });

  it('a key the deployment gave is kept', () => {
    const keys = demoApiKeysForRun({ ONCE_DEMO_API_KEY_TENANT_A: ' once_live_given ' });
    expect(keys.ONCE_DEMO_API_KEY_TENANT_A).toBe('once_live_given');
    expect(keys.ONCE_DEMO_API_KEY_TENANT_B).toMatch(/^once_demo_/);
  });
});
