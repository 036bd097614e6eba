/**
 * Whether a process with this pid exists (signal 0 checks without delivering anything).
 * Used to wait for a PostgreSQL postmaster to go away.
 *
 * @example
 * while (isProcessAlive(pid)) await sleep(100);
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
