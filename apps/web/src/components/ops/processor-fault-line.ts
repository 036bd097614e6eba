import type { ProcessorFaultStatus } from '../../demo/processor-fault-status.ts';
import { PROCESSOR_FAULT_SWITCH_FAULTS } from '../../demo/processor-fault-switches.ts';
import { formatTimestamp } from '../format/time.ts';

/** A piece of a fault switch's state line: words, or an id that links to its page. */
type FaultLinePart =
  | { text: string }
  | { id: string; href: string }
  | { time: string; iso: string };

/**
 * What a processor fault switch says under its button: "Armed: waiting for the next charge."
 * until it bites, then "Used 12:04:05 by pay_…" linking to the payment the fault broke.
 */
export function processorFaultLine(
  status: ProcessorFaultStatus | undefined,
  now: number = Date.now(),
): FaultLinePart[] {
  if (!status) return [];
  // The call it breaks, by its word: charge, capture, refund, webhook.
  const waitsFor = PROCESSOR_FAULT_SWITCH_FAULTS[status.switch].target;
  const armed = status.armed ? [{ text: `Armed: waiting for the next ${waitsFor}.` }] : [];
  const use = status.lastUse;
  if (!use) return armed;
  const used: FaultLinePart[] = [
    { text: status.armed ? ' Last used ' : 'Used ' },
    { time: formatTimestamp(use.at, now), iso: use.at },
  ];
  if (use.paymentId) {
    used.push(
      { text: ' by ' },
      { id: use.paymentId, href: `/ops/payments/${encodeURIComponent(use.paymentId)}` },
      { text: '.' },
    );
  } else if (use.processorObject) {
    // The processor's object, not (yet) known as one of this shop's payments.
    used.push({ text: ` on the processor's ${use.processorObject}.` });
  } else {
    used.push({ text: '.' });
  }
  return [...armed, ...used];
}
