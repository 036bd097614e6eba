/** What stops the launcher, and how it tells. */
interface LauncherShutdownOptions {
  /** Stops every part (the running system's `stop`); may be unset before anything started. */
  stop: () => Promise<void> | undefined;
  log: (line: string) => void;
  exit: (code: number) => void;
}

/**
 * The launcher's one way out (Ctrl-C, SIGTERM, a part that will not come back): the first call
 * prints why, stops every part, then exits with its code. Every later call waits for that same
 * stop instead of exiting under it: a second signal during a stop is routine (a Ctrl-C pressed
 * twice, a wrapper relaying it again). A stop that fails is told, not an unhandled rejection.
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
