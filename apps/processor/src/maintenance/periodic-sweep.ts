/**
 * A maintenance loop the processor runs beside its routes: `pass` every `intervalMs`, never
 * overlapping itself; a failed pass is only logged. `stop()` ends it.
 */
export function startPeriodicSweep<T>(options: {
  name: string;
  intervalMs: number;
  log: (line: string) => void;
  pass: () => Promise<T>;
  /** What a pass did, in words for the log; undefined logs nothing (an idle pass). */
  describe: (done: T) => string | undefined;
}): { stop(): void } {
  const { name, intervalMs, log, pass, describe } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(async () => {
      try {
        const said = describe(await pass());
        if (said) log(`${name}: ${said}`);
      } catch (error) {
        log(`${name}: pass failed: ${String(error)}`);
      }
      schedule();
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
