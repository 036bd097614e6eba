import { FAULT_KINDS, isWebhookFaultKind, MUTATING_OPERATIONS } from '@once/processor/fault-kinds';
import {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_SWITCHES,
  PROCESSOR_FAULT_TARGETS,
} from '@once/web/demo';
import { describe, expect, it } from 'vitest';

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

const switches = PROCESSOR_FAULT_SWITCHES.map((name) => ({
  name,
  ...PROCESSOR_FAULT_SWITCH_FAULTS[name],
}));

describe('the processor fault switches are the processor’s own fault kinds, each on a call it has', () => {
  it('offers at least one switch for every fault kind but those not offered, and none for others', () => {
    const offered = FAULT_KINDS.filter((kind) => !(kind in NOT_OFFERED));
    expect([...new Set(switches.map((s) => s.kind))].sort()).toEqual([...offered].sort());
  });

  it('names only kinds the processor has as not offered', () => {
    expect(FAULT_KINDS).toEqual(expect.arrayContaining(Object.keys(NOT_OFFERED)));
  });

  it('aims each request fault at one of the processor’s mutating calls, each webhook fault at a delivery', () => {
    for (const { name, kind, target } of switches) {
      const aim = PROCESSOR_FAULT_TARGETS[target];
      if (isWebhookFaultKind(kind)) expect(aim, name).toHaveProperty('eventTypePrefix');
      else expect(MUTATING_OPERATIONS, name).toContain((aim as { operation: string }).operation);
    }
  });

  it('has no two switches arming the same fault on the same call', () => {
    const armed = switches.map((s) => `${s.kind} on ${s.target}`);
    expect(new Set(armed).size).toBe(armed.length);
  });

  it('breaks a refund and a capture, not only the charge', () => {
    const targets = switches.map((s) => s.target);
    expect(targets).toEqual(expect.arrayContaining(['charge', 'capture', 'refund']));
  });
});
