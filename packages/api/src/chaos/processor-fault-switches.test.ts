import { FAULT_KINDS } from '@once/processor/fault-kinds';
import { describe, expect, it } from 'vitest';
import { PROCESSOR_FAULT_SWITCHES } from './chaos-switchboard.ts';

/**
 * Processor faults the cockpit deliberately offers no switch for, each with its reason. A
 * fault kind the processor adds fails this test until it gets a switch or a line here.
 */
const NOT_OFFERED: Record<string, string> = {
  // A read fault answers 404 for a payment intent that exists: it misleads the reconciler's
  // lookups, not the charge the audience watches. The chaos nemesis arms it; the demo's
  // after-charge faults can make an object lag (`lag_ms`) the same way.
  not_found: 'a read fault, not a failure of the charge or its webhook',
};

describe('the processor fault switches are the processor’s own fault kinds', () => {
  it('offers a switch for every fault kind but those not offered, and for no other', () => {
    const offered = FAULT_KINDS.filter((kind) => !(kind in NOT_OFFERED));
    expect([...PROCESSOR_FAULT_SWITCHES].sort()).toEqual(
      offered.map((kind) => `processor_${kind}`).sort(),
    );
  });

  it('names only kinds the processor has as not offered', () => {
    expect(FAULT_KINDS).toEqual(expect.arrayContaining(Object.keys(NOT_OFFERED)));
  });
});
