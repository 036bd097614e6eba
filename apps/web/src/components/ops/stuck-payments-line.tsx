import type { RouterOutputs } from '@once/api';

/**
 * How many payments are stuck undecided: unsettled after the reconciler looked at them
 * `afterChecks` times. Zero is the normal state; anything else is shown as an alert.
 */
export function StuckPaymentsLine({
  result,
}: {
  result: RouterOutputs['ops']['stuckPayments'] | undefined;
}) {
  if (!result) return null;
  const { stuck, afterChecks } = result;
  return (
    <p
      className={stuck > 0 ? 'error' : 'muted'}
      data-testid="ops-stuck"
      data-stuck={stuck}
      role={stuck > 0 ? 'alert' : undefined}
    >
      {stuck === 0
        ? `No payment is stuck: none is still undecided after ${afterChecks} checks with the processor.`
        : `⚠ ${stuck} payment${stuck === 1 ? ' is' : 's are'} stuck: still undecided after ${afterChecks} or more checks with the processor.`}
    </p>
  );
}
