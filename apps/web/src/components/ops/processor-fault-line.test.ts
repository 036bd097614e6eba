import { describe, expect, it } from 'vitest';
import type { ProcessorFaultStatus } from '../../demo/processor-fault-status.ts';
import { formatTimestamp } from '../format/time.ts';
import { processorFaultLine } from './processor-fault-line.ts';

const AT = '2026-11-25T12:04:05.000Z';
const NOW = Date.parse('2026-11-25T12:05:00.000Z');
const time = { time: formatTimestamp(AT, NOW), iso: AT };

const status = (
  armed: boolean,
  lastUse: Partial<NonNullable<ProcessorFaultStatus['lastUse']>> | null,
  name: ProcessorFaultStatus['switch'] = 'processor_fail_after_charge',
): ProcessorFaultStatus => ({
  switch: name,
  armed,
  lastUse: lastUse && {
    at: AT,
    operation: 'payment_intents.confirm',
    processorObject: 'pi_1',
    paymentId: null,
    ...lastUse,
  },
});

describe('processorFaultLine', () => {
  it('a switch never pressed says nothing', () => {
    expect(processorFaultLine(status(false, null), NOW)).toEqual([]);
    expect(processorFaultLine(undefined, NOW)).toEqual([]);
  });

  it('an armed fault waits for the call it hits', () => {
    expect(processorFaultLine(status(true, null), NOW)).toEqual([
      { text: 'Armed: waiting for the next charge.' },
    ]);
    expect(processorFaultLine(status(true, null, 'processor_slow_webhook'), NOW)).toEqual([
      { text: 'Armed: waiting for the next webhook.' },
    ]);
    expect(processorFaultLine(status(true, null, 'processor_refund_then_drop'), NOW)).toEqual([
      { text: 'Armed: waiting for the next refund.' },
    ]);
  });

  it('a used fault says when, and links the payment it hit to its timeline', () => {
    expect(processorFaultLine(status(false, { paymentId: 'pay_7' }), NOW)).toEqual([
      { text: 'Used ' },
      time,
      { text: ' by ' },
      { id: 'pay_7', href: '/ops/payments/pay_7' },
      { text: '.' },
    ]);
  });

  it('armed again after a use: both, the wait first', () => {
    expect(processorFaultLine(status(true, { paymentId: 'pay_7' }), NOW)).toEqual([
      { text: 'Armed: waiting for the next charge.' },
      { text: ' Last used ' },
      time,
      { text: ' by ' },
      { id: 'pay_7', href: '/ops/payments/pay_7' },
      { text: '.' },
    ]);
  });

  it('a use on no payment of this shop names the processor object instead', () => {
    expect(processorFaultLine(status(false, {}), NOW)).toEqual([
      { text: 'Used ' },
      time,
      { text: " on the processor's pi_1." },
    ]);
    expect(processorFaultLine(status(false, { processorObject: null }), NOW)).toEqual([
      { text: 'Used ' },
      time,
      { text: '.' },
    ]);
  });
});
