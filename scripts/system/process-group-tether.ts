import { type ChildProcess, spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tetherScript = fileURLToPath(new URL('./process-group-tether.cjs', import.meta.url));

/** Signals a process, if it still exists (a negative pid: its whole process group). */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** Signals a process group (a child spawned with `detached: true`: its pid), if it exists. */
export function signalGroup(pgid: number | undefined, signal: NodeJS.Signals): void {
  if (pgid) signalProcess(-pgid, signal);
}

/**
 * What this process has started, stopped by a process of its own (process-group-tether.cjs)
 * if this process dies first, however it dies: newest first, SIGTERM then SIGKILL. `release`
 * once everything was stopped in order.
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
