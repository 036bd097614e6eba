import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from './server-process.ts';

/** The machine a run happened on, for the report. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  ramGiB: number;
  node: string;
  platform: string;
  loadAverage: number[];
  /** Where `@once/idempotency` was loaded from, relative to the repository: the built `dist/` or `src/`. */
  library?: string;
}

export function describeMachine(): MachineInfo {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    ramGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
    library: libraryMeasured(),
  };
}

/**
 * The folder `@once/idempotency` resolves to in this process: `npm run bench` measures `dist/`,
 * the package as installed, not `src/` through tsx (see bench/README.md).
 */
function libraryMeasured(): string {
  const entry = fileURLToPath(import.meta.resolve('@once/idempotency'));
  return path.relative(repoRoot, path.dirname(entry));
}
