import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedPostgresChild, spawnEmbeddedPostgres } from '@once/postgres/embedded';
import postgres from 'postgres';
import {
  type ComposeService,
  readComposeFile,
  readDockerfileEnv,
  readDockerfileWorkdir,
} from './compose-file.ts';

/**
 * docker-compose without Docker. Each app container becomes a process started with the
 * file's own command, working directory and environment (after the Dockerfile's `ENV`), on a
 * loopback address of its own (127.0.0.2, ...) standing for its network namespace: service
 * host names in URLs resolve to it, a wildcard bind value (`HOST: 0.0.0.0`) becomes it (a
 * server that binds 127.0.0.1 instead is unreachable, as in a container), the health check
 * runs against it, and a port already taken on it is moved to a free one everywhere.
 *
 * The `postgres` image is replaced by an embedded PostgreSQL set up as the image does:
 * POSTGRES_USER owning POSTGRES_DB, then the mounted `docker-entrypoint-initdb.d` scripts.
 */
export interface ComposeTopologyOptions {
  repoRoot: string;
  composeFile?: string;
  dockerfile?: string;
  log?: (line: string) => void;
  /** How long one service may take to pass its health check or finish (one-shot). */
  readyTimeoutMs?: number;
  /** Set in every container after its own variables: what only a test needs. */
  hostEnv?: Record<string, string>;
  /** What compose interpolates `${NAME}` from (its `.env` and the shell), e.g. the secrets. */
  projectEnv?: Record<string, string>;
}

interface ComposeInstance {
  /** `worker-1`, `worker-2` for a replicated service, else the service's name. */
  name: string;
  service: ComposeService;
  address: string;
  env: Record<string, string>;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  lines: string[];
  /** container port -> port on `address` (the same unless it was taken). */
  ports: Map<number, number>;
}

export interface RunningComposeTopology {
  instances: ComposeInstance[];
  /** `http://processor:4100` -> `http://127.0.0.3:4100`: how the host reaches a published port. */
  resolveUrl(url: string): string;
  /** SIGTERM to each app process (like `docker compose stop`), newest first; their exits. */
  stop(): Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }[]>;
}

const WILDCARDS = new Set(['0.0.0.0', '::']);
/** docker compose stop's default grace before SIGKILL. */
const STOP_GRACE_MS = 10_000;

function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether this machine answers on 127.0.0.2 and up (Linux does; macOS needs aliases). */
export function loopbackAliasesAvailable(): Promise<boolean> {
  return freePort('127.0.0.2').then(
    () => true,
    () => false,
  );
}

/** Where each service's name and ports lead on this machine. */
class Resolver {
  readonly hosts = new Map<string, { address: string; ports: Map<number, number> }>();

  /** `//name:port` and `@name:port` in any string -> the service's address and mapped port. */
  resolve(value: string): string {
    return value.replace(
      /(\/\/|@)([a-z0-9_-]+):(\d+)/gi,
      (whole, lead: string, name: string, port: string) => {
        const host = this.hosts.get(name);
        if (!host) return whole;
        return `${lead}${host.address}:${host.ports.get(Number(port)) ?? port}`;
      },
    );
  }
}

async function startPostgres(
  service: ComposeService,
  composeDir: string,
  log: (line: string) => void,
): Promise<{ pg: EmbeddedPostgresChild; port: number }> {
  const pg = await spawnEmbeddedPostgres({ durability: 'fast' });
  const user = service.environment.POSTGRES_USER ?? 'postgres';
  const password = service.environment.POSTGRES_PASSWORD ?? '';
  const database = service.environment.POSTGRES_DB ?? user;
  const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(
      `create role "${user}" login superuser password '${password.replaceAll("'", "''")}'`,
    );
    await admin.unsafe(`create database "${database}" owner "${user}"`);
  } finally {
    await admin.end({ timeout: 1 });
  }
  const url = new URL(pg.adminUrl);
  Object.assign(url, {
    username: encodeURIComponent(user),
    password: encodeURIComponent(password),
  });
  url.pathname = `/${database}`;
  const asUser = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    for (const volume of service.volumes) {
      const [source, target] = volume.split(':');
      if (!target?.startsWith('/docker-entrypoint-initdb.d/') || !source?.startsWith('.')) continue;
      log(`postgres  | running ${source} (${target})`);
      await asUser.unsafe(readFileSync(path.resolve(composeDir, source), 'utf8'));
    }
  } finally {
    await asUser.end({ timeout: 1 });
  }
  return { pg, port: Number(url.port) };
}

function spawnInstance(
  instance: Omit<ComposeInstance, 'child' | 'exited' | 'lines'>,
  cwd: string,
  log: (line: string) => void,
): ComposeInstance {
  const [program, ...args] = instance.service.command;
  if (!program) throw new Error(`service ${instance.service.name} has no command`);
  const child = spawn(program === 'node' ? process.execPath : program, args, {
    cwd,
    env: instance.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: string[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    if (lines.length > 200) lines.shift();
    log(`${instance.name.padEnd(10)}| ${line}`);
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { ...instance, child, exited, lines };
}

/** Runs the service's own health check (its 127.0.0.1 being the instance's address). */
function runHealthcheck(instance: ComposeInstance, cwd: string): Promise<boolean> {
  const test = instance.service.healthcheck!;
  const rewrite = (arg: string) =>
    arg.replace(
      /(127\.0\.0\.1|localhost):(\d+)/g,
      (_, _host, port: string) => `${instance.address}:${instance.ports.get(Number(port)) ?? port}`,
    );
  const [kind, ...rest] = test;
  const [program, ...args] =
    kind === 'CMD-SHELL' ? ['sh', '-c', rewrite(rest.join(' '))] : rest.map(rewrite);
  const check = spawn(program === 'node' ? process.execPath : program!, args, {
    cwd,
    env: instance.env,
    stdio: 'ignore',
    timeout: 3_000,
    killSignal: 'SIGKILL',
  });
  return new Promise((resolve) => check.once('exit', (code) => resolve(code === 0)));
}

function describeFailure(instance: ComposeInstance, what: string): Error {
  return new Error(
    `${instance.name} (${instance.address}) ${what}\n--- last lines of ${instance.name} ---\n${instance.lines.slice(-30).join('\n')}`,
  );
}

async function waitHealthy(instance: ComposeInstance, cwd: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
      const { code, signal } = await instance.exited;
      throw describeFailure(instance, `exited (code ${code}, signal ${signal}) before healthy`);
    }
    if (await runHealthcheck(instance, cwd)) return;
    await sleep(500);
  }
  throw describeFailure(
    instance,
    `never passed its health check within ${timeoutMs} ms: ${instance.service.healthcheck!.join(' ')}`,
  );
}

async function waitCompleted(instance: ComposeInstance, timeoutMs: number) {
  const result = await Promise.race([instance.exited, sleep(timeoutMs).then(() => null)]);
  if (result === null) throw describeFailure(instance, `did not finish within ${timeoutMs} ms`);
  if (result.code !== 0) {
    throw describeFailure(instance, `exited with ${result.code} (signal ${result.signal})`);
  }
}

/**
 * Starts every service of the compose file in `depends_on` order, waiting for each condition
 * (`service_healthy`: its own health check; `service_completed_successfully`: exit 0).
 */
export async function startComposeTopology(
  options: ComposeTopologyOptions,
): Promise<RunningComposeTopology> {
  const log = options.log ?? (() => {});
  const composeFile = options.composeFile ?? path.join(options.repoRoot, 'docker-compose.yml');
  const dockerfile = options.dockerfile ?? path.join(options.repoRoot, 'Dockerfile');
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const services = readComposeFile(composeFile, options.projectEnv);
  const imageEnv = readDockerfileEnv(dockerfile);
  const imageWorkdir = readDockerfileWorkdir(dockerfile);
  const inRepo = (dir: string) =>
    path.join(
      options.repoRoot,
      path.posix.relative(imageWorkdir, path.posix.resolve(imageWorkdir, dir)),
    );

  const resolver = new Resolver();
  const instances: ComposeInstance[] = [];
  let pg: EmbeddedPostgresChild | undefined;

  const stop: RunningComposeTopology['stop'] = async () => {
    const results = [];
    for (const instance of [...instances].reverse()) {
      if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
        results.push({ name: instance.name, ...(await instance.exited) });
        continue;
      }
      instance.child.kill('SIGTERM');
      const killGroup = () => {
        try {
          process.kill(-instance.child.pid!, 'SIGKILL');
        } catch {}
      };
      const timer = setTimeout(killGroup, STOP_GRACE_MS);
      const result = await instance.exited;
      clearTimeout(timer);
      killGroup(); // anything it left behind in its group
      results.push({ name: instance.name, ...result });
    }
    await pg?.stop();
    return results;
  };

  try {
    // Addresses and ports first: every URL in every environment must resolve.
    let nextAddress = 2;
    const planned: {
      service: ComposeService;
      name: string;
      address: string;
      ports: Map<number, number>;
    }[] = [];
    for (const service of services) {
      if (service.image?.startsWith('postgres')) continue;
      for (let i = 1; i <= service.replicas; i++) {
        const address = `127.0.0.${nextAddress++}`;
        const containerPorts = new Set<number>(service.publishedPorts);
        for (const [key, value] of Object.entries(service.environment)) {
          if (/PORT$/.test(key) && /^\d+$/.test(value)) containerPorts.add(Number(value));
        }
        for (const match of (service.healthcheck ?? []).join(' ').matchAll(/127\.0\.0\.1:(\d+)/g)) {
          containerPorts.add(Number(match[1]));
        }
        const ports = new Map<number, number>();
        for (const port of containerPorts) {
          const hostPort = (await portFree(address, port)) ? port : await freePort(address);
          if (hostPort !== port)
            log(`topology  | ${service.name}: port ${port} taken on ${address}, using ${hostPort}`);
          ports.set(port, hostPort);
        }
        const name = service.replicas > 1 ? `${service.name}-${i}` : service.name;
        planned.push({ service, name, address, ports });
        if (!resolver.hosts.has(service.name)) resolver.hosts.set(service.name, { address, ports });
      }
    }

    const started = new Set<string>();
    const healthy = new Set<string>();
    const completed = new Set<string>();
    const pending = [...services];
    while (pending.length > 0) {
      const index = pending.findIndex((s) =>
        Object.keys(s.dependsOn).every((dependency) => started.has(dependency)),
      );
      if (index < 0) throw new Error(`depends_on cycle among ${pending.map((s) => s.name)}`);
      const [service] = pending.splice(index, 1) as [ComposeService];
      for (const [dependency, condition] of Object.entries(service.dependsOn)) {
        if (condition === 'service_healthy' && !healthy.has(dependency)) {
          throw new Error(
            `${service.name} waits for ${dependency} to be healthy; it has no health check`,
          );
        }
        if (condition === 'service_completed_successfully' && !completed.has(dependency)) {
          throw new Error(`${service.name} waits for ${dependency} to complete; it did not`);
        }
      }

      if (service.image?.startsWith('postgres')) {
        const db = await startPostgres(service, path.dirname(composeFile), log);
        pg = db.pg;
        resolver.hosts.set(service.name, {
          address: '127.0.0.1',
          ports: new Map([[5432, db.port]]),
        });
        started.add(service.name);
        healthy.add(service.name);
        continue;
      }

      const mine = planned.filter((p) => p.service === service);
      const cwd = inRepo(service.workingDir ?? imageWorkdir);
      const launched = mine.map((plan) => {
        const env: Record<string, string> = {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/tmp',
          ...imageEnv,
        };
        for (const [key, value] of Object.entries(service.environment)) {
          if (WILDCARDS.has(value)) env[key] = plan.address;
          else if (/PORT$/.test(key) && /^\d+$/.test(value))
            env[key] = String(plan.ports.get(Number(value)) ?? value);
          else env[key] = resolver.resolve(value);
        }
        Object.assign(env, options.hostEnv);
        const instance = spawnInstance({ ...plan, env }, cwd, log);
        instances.push(instance);
        return instance;
      });
      started.add(service.name);
      if (service.healthcheck) {
        await Promise.all(launched.map((i) => waitHealthy(i, cwd, readyTimeoutMs)));
        healthy.add(service.name);
      } else if (service.restart === 'no') {
        await Promise.all(launched.map((i) => waitCompleted(i, readyTimeoutMs)));
        completed.add(service.name);
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return { instances, resolveUrl: (url) => resolver.resolve(url), stop };
}
