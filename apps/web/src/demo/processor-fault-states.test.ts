import { PROCESSOR_FAULT_SWITCHES } from '@once/api/chaos-switchboard';
import { describe, expect, it } from 'vitest';
import { processorFaultStates } from './processor-fault-states.ts';

const use = (used_at: string, object: string) => ({
  used_at,
  operation: 'payment_intents.confirm',
  object,
});

describe('processorFaultStates', () => {
  it('a switch is armed while a fault of its kind has uses left; its last use is the newest of its kind', () => {
    const states = processorFaultStates([
      { kind: 'fail_after_charge', remaining: 0, uses: [use('2026-11-25T12:00:00.000Z', 'pi_1')] },
      { kind: 'fail_after_charge', remaining: 0, uses: [use('2026-11-25T12:04:05.000Z', 'pi_2')] },
      { kind: 'delay', remaining: 1, uses: [] },
      // A lag's read fault belongs to no switch.
      { kind: 'not_found', remaining: 5, uses: [use('2026-11-25T12:09:00.000Z', 'pi_3')] },
    ]);
    const of = (name: string) => states.find((s) => s.switch === name);
    expect(of('processor_fail_after_charge')).toEqual({
      switch: 'processor_fail_after_charge',
      armed: false,
      lastUse: {
        at: '2026-11-25T12:04:05.000Z',
        operation: 'payment_intents.confirm',
        processorObject: 'pi_2',
      },
    });
    expect(of('processor_delay')).toEqual({
      switch: 'processor_delay',
      armed: true,
      lastUse: null,
    });
    expect(of('processor_duplicate_webhook')).toMatchObject({ armed: false, lastUse: null });
    // One state per switch, in the switches' order.
    expect(states.map((s) => s.switch)).toEqual([...PROCESSOR_FAULT_SWITCHES]);
  });
});
