import os from 'node:os';

/** The machine a run happened on, for the report. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  ramGiB: number;
  node: string;
  platform: string;
  loadAverage: number[];
}

export function describeMachine(): MachineInfo {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    ramGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}
