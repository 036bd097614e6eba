/** One line per event on stdout, `event key=value ...`, so the demo orchestrator can prefix it. */
export type Log = (event: string, fields?: Record<string, unknown>) => void;

/**
 * A logger that prints `event key=value` lines; values with spaces are JSON-quoted.
 *
 * @example
 * const log = createLogger('worker-1');
 * log('job.claimed', { job: 'job_1', attempt: 2 }); // "worker-1 job.claimed job=job_1 attempt=2"
 */
export function createLogger(prefix: string, write: (line: string) => void = console.log): Log {
  return (event, fields = {}) => {
    const parts = [prefix, event];
    for (const [key, value] of Object.entries(fields)) {
      if (value === undefined) continue;
      const text = value instanceof Error ? value.message : String(value);
      parts.push(`${key}=${/[\s"=]/.test(text) || text === '' ? JSON.stringify(text) : text}`);
    }
    write(parts.join(' '));
  };
}
