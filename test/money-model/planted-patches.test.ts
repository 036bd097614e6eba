import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The planted bugs that prove the model search finds each class (`npm run search --
// --planted` runs them): a patch that no longer applies proves nothing, so it fails here.
const planted = path.join(import.meta.dirname, 'planted');
const patches = readdirSync(planted).filter((f) => f.endsWith('.patch'));
const root = path.resolve(import.meta.dirname, '../..');
// The chaos suite's planted bugs (`npm run chaos:planted -w e2e`) are held to the same rule.
const chaosPlanted = path.join(root, 'e2e/chaos/planted');
const chaosPatches = readdirSync(chaosPlanted).filter((f) => f.endsWith('.patch'));

describe('the model search’s planted bugs', () => {
  it('are there, one per class the search must find', () => {
    expect(patches.map((p) => p.replace(/\.patch$/, '')).sort()).toEqual([
      'api-key-remembered',
      'capture-skips-state-check',
      'leased-cleanup-gives-up',
      'library-atomic-503-after-commit',
      'library-atomic-key-outside-tx',
      'library-hono-ignores-principal',
      'library-lease-not-fenced',
      'lost-commit-read-back',
      'money-keys-by-credential',
      'money-keys-by-transport',
      'operator-session-remembered',
      'ops-open-to-shoppers',
      'outage-answered-500',
      'pay-ignores-money-action-key',
      'refund-any-tenants-payment',
      'refund-cap-before-lock',
      'released-key-from-snapshot',
      'session-survives-key-rotation',
      'shopper-reads-any-payment',
      'sign-out-heard-by-one-web',
      'void-and-capture-both-act',
    ]);
  });

  it.each([
    ...patches.map((p) => path.join(planted, p)),
    ...chaosPatches.map((p) => path.join(chaosPlanted, p)),
  ])('%s applies to this tree', (patch) => {
    expect(() =>
      execFileSync('git', ['apply', '--check', patch], {
        cwd: root,
        stdio: 'pipe',
      }),
    ).not.toThrow();
  });
});
