import { type ChildProcess, spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tetherScript = fileURLToPath(new URL('./process-group-tether.cjs', import.meta.url));

/**
 * What this process has started, stopped by a process of its own (process-group-tether.cjs)
 * if this process dies first, however it dies (SIGKILL included): newest first, SIGTERM then
 * SIGKILL. The tether starts with the first thing told; `release` after stopping everything
 * in order, or the tether stops it all again when this process exits.
 *
 * @example
 * const tether = new ProcessGroupTether();
 * tether.addGroup(child.pid!); // spawned with detached: true
 * // ... stop the child, then:
 * tether.release();
 */
export class ProcessGroupTether {
  private child: ChildProcess | undefined;

  /** A process group (a child spawned with `detached: true`: its pid). */
  addGroup(pgid: number): void {
    this.send(String(pgid));
  }

  /**
   * Every process working in `dir` or below it, for programs that leave their process group:
   * PostgreSQL's postmaster and backends (setsid), found by their working directory, which is
   * their data directory. `dir` may not exist yet; its parent must.
   */
  addDirectory(dir: string): void {
    this.send(`dir ${path.join(realpathSync(path.dirname(dir)), path.basename(dir))}`);
  }

  /** Everything told was stopped: the tether exits without stopping anything. */
  release(): void {
    this.child?.stdin?.end('done\n');
    this.child = undefined;
  }

  private send(line: string): void {
    if (!this.child) {
      this.child = spawn(process.execPath, [tetherScript], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      this.child.unref();
      // Never keep this process alive just for the tether's pipe.
      (this.child.stdin as unknown as { unref?: () => void }).unref?.();
    }
    this.child.stdin?.write(`${line}\n`);
  }
}
