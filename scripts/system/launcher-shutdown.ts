/**
 * What stops the launcher, and how it tells: each is one call of the function
 * {@link createLauncherShutdown} returns.
 */
interface LauncherShutdownOptions {
  /** Stops every part (the running system's `stop`); may be unset before anything started. */
  stop: () => Promise<void> | undefined;
  log: (line: string) => void;
  exit: (code: number) => void;
}

/**
 * The launcher's one way out (Ctrl-C, SIGTERM, a part that will not come back): the first call
 * prints why, stops every part and prints `all processes stopped`, then exits with its code.
 * Every later call waits for that same stop instead of exiting under it: a stop takes seconds
 * (a web finishing a request, the database last), and a second signal is routine: a Ctrl-C
 * pressed twice, or relayed again by a wrapper (the `tsx` CLI re-sends a signal the child did
 * not acknowledge within 30 ms, then SIGKILLs it: hence `node --import tsx` in `npm run demo`),
 * as is a part exiting while the others stop. A stop that fails is told, never an unhandled
 * rejection that ends the launcher before its report (the tether then stops what is left, see
 * supervisor.ts).
 *
 * @example
 * const shutdown = createLauncherShutdown({ stop: () => system?.stop(), log: console.log, exit: process.exit });
 * process.on('SIGINT', () => void shutdown(0, 'Ctrl-C'));
 */
export function createLauncherShutdown(options: LauncherShutdownOptions) {
  let stopped: Promise<void> | undefined;
  return function shutdown(code: number, reason: string): Promise<void> {
    stopped ??= (async () => {
      options.log(`\nstopping Once (${reason}) ...`);
      let exitCode = code;
      try {
        await options.stop();
        options.log('all processes stopped');
      } catch (error) {
        options.log(`stopping failed: ${error instanceof Error ? error.message : String(error)}`);
        exitCode = 1;
      }
      options.exit(exitCode);
    })();
    return stopped;
  };
}
