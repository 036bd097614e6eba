/**
 * The processor calls a fault switch can break, by the cockpit's word for each. A switch breaks
 * exactly that call: a confirm fault never bites the reconciler's cancel, nor a refund fault the
 * charge.
 */
export const PROCESSOR_FAULT_TARGETS = {
  charge: { operation: 'payment_intents.confirm' },
  capture: { operation: 'payment_intents.capture' },
  refund: { operation: 'refunds.create' },
  webhook: { eventTypePrefix: 'payment_intent.' },
} as const;
export type ProcessorFaultTargetName = keyof typeof PROCESSOR_FAULT_TARGETS;

/**
 * The processor's faults, armed once (count 1) for the caller's processor account. Every
 * processor fault kind has a switch but those named not offered in the root's
 * test/processor-fault-switches.test.ts (which holds this list to the processor's own kinds and
 * calls).
 */
export const PROCESSOR_FAULT_SWITCHES = [
  'processor_fail_before_charge',
  'processor_charge_then_drop',
  'processor_delay',
  'processor_fail_after_charge',
  'processor_rate_limit',
  'processor_lock_timeout',
  'processor_capture_then_drop',
  'processor_refund_then_drop',
  'processor_refund_fail_after',
  'processor_slow_webhook',
  'processor_duplicate_webhook',
] as const;
export type ProcessorFaultSwitchName = (typeof PROCESSOR_FAULT_SWITCHES)[number];

/** What one switch arms: a fault kind of the processor's, on the one call it breaks. */
export interface ProcessorFaultSwitchFault {
  kind: string;
  target: ProcessorFaultTargetName;
}

export const PROCESSOR_FAULT_SWITCH_FAULTS: Record<
  ProcessorFaultSwitchName,
  ProcessorFaultSwitchFault
> = {
  processor_fail_before_charge: { kind: 'fail_before_charge', target: 'charge' },
  processor_charge_then_drop: { kind: 'charge_then_drop', target: 'charge' },
  processor_delay: { kind: 'delay', target: 'charge' },
  processor_fail_after_charge: { kind: 'fail_after_charge', target: 'charge' },
  processor_rate_limit: { kind: 'rate_limit', target: 'charge' },
  processor_lock_timeout: { kind: 'lock_timeout', target: 'charge' },
  processor_capture_then_drop: { kind: 'charge_then_drop', target: 'capture' },
  processor_refund_then_drop: { kind: 'charge_then_drop', target: 'refund' },
  processor_refund_fail_after: { kind: 'fail_after_charge', target: 'refund' },
  processor_slow_webhook: { kind: 'slow_webhook', target: 'webhook' },
  processor_duplicate_webhook: { kind: 'duplicate_webhook', target: 'webhook' },
};

/** How the processor names a use of a webhook fault (its `operation`). */
const WEBHOOK_DELIVERY_OPERATION = 'webhooks.deliver';

/**
 * The processor operation a switch's fault is armed on and bites, as its admin API reports
 * it: `refunds.create` for a refund switch, `webhooks.deliver` for a webhook one.
 *
 * @example
 * processorFaultOperation('processor_refund_then_drop'); // 'refunds.create'
 */
export function processorFaultOperation(name: ProcessorFaultSwitchName): string {
  const target = PROCESSOR_FAULT_TARGETS[PROCESSOR_FAULT_SWITCH_FAULTS[name].target];
  return 'operation' in target ? target.operation : WEBHOOK_DELIVERY_OPERATION;
}
