/**
 * Browser customers, `concurrency` pages at a time, each started no earlier than its planned
 * time, until the clients' deadline. A floor measures the work, not the machine: past the
 * deadline a customer still starts while the run is `short` of its floors, until `boundAt`.
 */
export async function runBrowserLanes<T>(
  customers: readonly T[],
  options: {
    concurrency: number;
    startWhenDue: (customer: T) => Promise<void>;
    now: () => number;
    /** Past this (ms since the run began) clients stop; unknown (very large) until the heal. */
    deadlineAt: () => number;
    /** Past this no customer starts or goes on; unknown (very large) until the heal. */
    boundAt: () => number;
    /** Whether the run is still short of the work its browser floors ask. */
    short: () => boolean;
    /** How long a customer started past the deadline may take. */
    lateCustomerMs: number;
    run: (customer: T, deadlineAt: () => number) => Promise<void>;
  },
): Promise<{ letIn: number; late: number }> {
  let next = 0;
  let letIn = 0;
  let late = 0;
  const lane = async () => {
    while (next < customers.length) {
      const customer = customers[next++]!;
      await options.startWhenDue(customer);
      const now = options.now();
      if (now <= options.deadlineAt()) {
        letIn++;
        await options.run(customer, options.deadlineAt);
        continue;
      }
      if (!options.short() || now >= options.boundAt()) continue;
      letIn++;
      late++;
      const own = now + options.lateCustomerMs;
      await options.run(customer, () => Math.min(own, options.boundAt()));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, lane));
  return { letIn, late };
}
