import { describe, expect, it } from 'vitest';
import { processorFaultStates } from './processor-fault-states.ts';
import { PROCESSOR_FAULT_SWITCHES } from './processor-fault-switches.ts';

const use = (used_at: string, object: string, operation = 'payment_intents.confirm') => ({
  used_at,
  operation,
  object,
});

describe('processorFaultStates', () => {
  it('a switch is armed while a fault of its kind waits on its call; its last use is the newest of its kind there', () => {
    const states = processorFaultStates(
      [{ kind: 'delay', operation: 'payment_intents.confirm' }],
      [
        { kind: 'fail_after_charge', uses: [use('2026-11-25T12:00:00.000Z', 'pi_1')] },
        { kind: 'fail_after_charge', uses: [use('2026-11-25T12:04:05.000Z', 'pi_2')] },
        { kind: 'delay', uses: [] },
        // A lag's read fault belongs to no switch.
        { kind: 'not_found', uses: [use('2026-11-25T12:09:00.000Z', 'pi_3')] },
      ],
    );
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

  it('two switches of one kind on different calls keep to their own call', () => {
    const states = processorFaultStates(
      [{ kind: 'charge_then_drop', operation: 'refunds.create' }],
      [
        {
          kind: 'charge_then_drop',
          uses: [use('2026-11-25T12:00:00.000Z', 'pi_1')],
        },
        {
          kind: 'charge_then_drop',
          uses: [use('2026-11-25T12:05:00.000Z', 're_1', 'refunds.create')],
        },
      ],
    );
    const of = (name: string) => states.find((s) => s.switch === name);
    expect(of('processor_charge_then_drop')).toMatchObject({
      armed: false,
      lastUse: { processorObject: 'pi_1', operation: 'payment_intents.confirm' },
    });
    expect(of('processor_refund_then_drop')).toMatchObject({
      armed: true,
      lastUse: { processorObject: 're_1', operation: 'refunds.create' },
    });
    expect(of('processor_capture_then_drop')).toMatchObject({ armed: false, lastUse: null });
  });
});
