import { describe, expect, it } from 'vitest';
import { KEY_STATE_WORDS } from './ops-cockpit.tsx';

describe('the cockpit’s key filter', () => {
  it('offers every state of the library, tombstones (expired) included', () => {
    expect(Object.keys(KEY_STATE_WORDS)).toEqual([
      'in_progress',
      'completed',
      'released',
      'unknown',
      'expired',
    ]);
  });
});
