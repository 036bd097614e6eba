// A real replicated PostgreSQL cluster on loopback: one etcd and three Patroni-managed
// PostgreSQL 15 nodes under a fresh directory, and what a failure does to a node: kill -9,
// SIGSTOP and resume, a partition, a switchover, a restart that rejoins by pg_rewind.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { ProcessGroupTether, signalGroup, signalProcess } from '../system/process-group-tether.ts';
import { ensureHaPackages, POSTGRES_BIN_DIR } from './install.ts';
import {
  CHAOS_TIMINGS,
  HA_PASSWORDS,
  type HaTimings,
  patroniConfig,
  type ReplicationMode,
} from './patroni-config.ts';

interface HaMember {
  name: string;
  port: number;
  /** Patroni's words: leader, sync_standby, replica. */
  role: string;
  /** running, starting, stopped, ... */
  state: string;
  timeline?: number;
  lag?: number | string;
}

interface HaClusterOptions {
  mode: ReplicationMode;
  /** First of the ports: etcd (2), then PostgreSQL (3), then Patroni's REST API (3). Below 32768. */
  basePort?: number;
  timings?: HaTimings;
  log?: (line: string) => void;
}

const NODE_NAMES = ['pg1', 'pg2', 'pg3'] as const;
export type HaNodeName = (typeof NODE_NAMES)[number];

const execFileAsync = promisify(execFile);

/** PostgreSQL refuses to run as root: as root, the cluster runs as Debian's `postgres` user. */
function serviceUser(): { uid: number; gid: number; prefix: string[] } | undefined {
  if (os.userInfo().uid !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
  return { uid, gid, prefix: ['runuser', '-u', 'postgres', '--'] };
}

export class HaCluster {
  readonly mode: ReplicationMode;
  readonly dir: string;
  readonly etcdPort: number;
  private readonly basePort: number;
  private readonly timings: HaTimings;
  private readonly log: (line: string) => void;
  private readonly user = serviceUser();
  private etcd?: ChildProcess;
  private readonly patroni = new Map<HaNodeName, ChildProcess>();
  /**
   * Stops every process of the cluster if its owner dies without `stop`: each node's Patroni
   * first (it stops its PostgreSQL and gives up its leader key while etcd still answers), then
   * what is left of its PostgreSQL (by data directory: it runs in a session of its own), etcd last.
   */
  private readonly tether = new ProcessGroupTether();
  private starting = false;
  private startFailure: Error | undefined;

  constructor(options: HaClusterOptions) {
    this.mode = options.mode;
    this.basePort = options.basePort ?? 24_000;
    this.etcdPort = this.basePort;
    this.timings = options.timings ?? CHAOS_TIMINGS;
    this.log = options.log ?? (() => {});
    // os.tmpdir() is reachable by every user, unlike a clone under /root (0700).
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'once-ha-'));
    chmodSync(this.dir, 0o755);
    if (this.user) chownSync(this.dir, this.user.uid, this.user.gid);
  }

  readonly nodes: readonly HaNodeName[] = NODE_NAMES;

  pgPort(name: HaNodeName): number {
    return this.basePort + 2 + NODE_NAMES.indexOf(name);
  }

  restPort(name: HaNodeName): number {
    return this.basePort + 5 + NODE_NAMES.indexOf(name);
  }

  /** The URL an app uses: every node, `target_session_attrs=primary`. */
  url(database = 'postgres'): string {
    const hosts = NODE_NAMES.map((n) => `127.0.0.1:${this.pgPort(n)}`).join(',');
    return `postgres://postgres:${HA_PASSWORDS.superuser}@${hosts}/${database}?target_session_attrs=primary`;
  }

  /** One node only, whatever its role (for checks that must read a given node). */
  nodeUrl(name: HaNodeName, database = 'postgres'): string {
    return `postgres://postgres:${HA_PASSWORDS.superuser}@127.0.0.1:${this.pgPort(name)}/${database}`;
  }

  async start(): Promise<void> {
    ensureHaPackages(this.log);
    this.starting = true;
    try {
      this.startEtcd();
      await this.waitFor(
        'etcd',
        async () => (await fetch(`http://127.0.0.1:${this.etcdPort}/health`)).ok,
        20_000,
      );
      for (const name of NODE_NAMES) this.startNode(name);
      const leader = await this.waitForLeader(90_000);
      await this.waitForHealthy(120_000);
      this.log(`cluster up (${this.mode}): leader ${leader}`);
    } finally {
      this.starting = false;
    }
  }

  /** Starts `command` as the cluster's OS user, in a process group the tether stops. */
  private spawnAs(command: string[], logName: string): ChildProcess {
    const out = openSync(path.join(this.dir, `${logName}.log`), 'a');
    const argv = [...(this.user?.prefix ?? []), ...command];
    // Own process group: a kill reaches runuser, Patroni and etcd alike. Started in the
    // cluster's folder: the `postgres` user cannot enter a clone under a 0700 home.
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: this.dir,
      detached: true,
      stdio: ['ignore', out, out],
    });
    child.unref();
    if (child.pid) this.tether.addGroup(child.pid);
    // etcd or a Patroni that exits while the cluster starts fails the start at once.
    child.once('exit', (code, signal) => {
      if (!this.starting || this.startFailure) return;
      this.startFailure = new Error(
        `HA cluster: ${logName} exited (${signal ?? `code ${code}`}) while the cluster started ` +
          `(its log: ${path.join(this.dir, `${logName}.log`)})`,
      );
    });
    return child;
  }

  private startEtcd(): void {
    const peer = `http://127.0.0.1:${this.etcdPort + 1}`;
    const client = `http://127.0.0.1:${this.etcdPort}`;
    const dataDir = path.join(this.dir, 'etcd');
    this.etcd = this.spawnAs(
      [
        'etcd',
        '--name=once-ha',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=once-ha=${peer}`,
        // Patroni talks etcd's v2 protocol (see patroni-config.ts).
        '--enable-v2=true',
      ],
      'etcd',
    );
  }

  /** Starts (or restarts) a node's Patroni; an old primary rejoins as a standby by pg_rewind. */
  startNode(name: HaNodeName): void {
    const configFile = path.join(this.dir, `${name}.yml`);
    const config = patroniConfig({
      scope: 'once',
      name,
      pgPort: this.pgPort(name),
      restPort: this.restPort(name),
      etcdPort: this.etcdPort,
      dataDir: path.join(this.dir, name),
      runDir: this.dir,
      mode: this.mode,
      timings: this.timings,
    });
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    if (this.user) chownSync(configFile, this.user.uid, this.user.gid);
    // Told before its Patroni: the tether stops newest first, so Patroni goes first.
    this.tether.addDirectory(path.join(this.dir, name));
    this.patroni.set(name, this.spawnAs(['patroni', configFile], name));
  }

  /**
   * The node's PostgreSQL processes: the postmaster, then its children, each of which leaves
   * the postmaster's process group (setsid), so a signal to that group misses the backends.
   */
  private postgresProcesses(name: HaNodeName): number[] {
    let postmaster: number;
    try {
      postmaster = Number(
        readFileSync(path.join(this.dir, name, 'postmaster.pid'), 'utf8').split('\n')[0],
      );
    } catch {
      return [];
    }
    // A standalone backend (initdb's bootstrap) writes its pid negated; it runs in Patroni's
    // group, which a signal to the node reaches anyway.
    if (!(postmaster > 0)) return [];
    let children: number[] = [];
    try {
      children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)])
        .toString()
        .split('\n')
        .map(Number)
        .filter(Boolean);
    } catch {
      // No children (ps exits 1).
    }
    return [postmaster, ...children];
  }

  private signalNode(name: HaNodeName, signal: NodeJS.Signals): void {
    // Patroni first, so it cannot restart the postmaster in between; the postmaster before
    // its children, so it forks no new one in between.
    signalGroup(this.patroni.get(name)?.pid, signal);
    for (const pid of this.postgresProcesses(name)) signalProcess(pid, signal);
  }

  /**
   * Whether the node's Patroni, as this cluster started it, still runs (the DCS keeps a killed
   * node's last state until its member key expires, a ttl later).
   */
  isNodeRunning(name: HaNodeName): boolean {
    const patroni = this.patroni.get(name);
    return patroni !== undefined && patroni.exitCode === null && patroni.signalCode === null;
  }

  /** kill -9 of the whole node: Patroni, the postmaster and every backend. */
  killNode(name: HaNodeName): void {
    this.log(`kill -9 ${name}`);
    this.signalNode(name, 'SIGKILL');
  }

  /** SIGSTOP of the whole node: it holds its connections and answers nothing, as if cut off. */
  pauseNode(name: HaNodeName): void {
    this.log(`SIGSTOP ${name}`);
    this.signalNode(name, 'SIGSTOP');
  }

  /**
   * The node cut off from its standbys and from etcd while its clients still reach it: its
   * Patroni and its WAL senders stop, its backends go on answering.
   */
  partitionNode(name: HaNodeName): void {
    this.log(`partition ${name} (Patroni and WAL senders stopped)`);
    signalGroup(this.patroni.get(name)?.pid, 'SIGSTOP');
    for (const pid of this.walSenders(name)) signalProcess(pid, 'SIGSTOP');
  }

  private walSenders(name: HaNodeName): number[] {
    const [, ...children] = this.postgresProcesses(name);
    if (children.length === 0) return [];
    try {
      return execFileSync('ps', ['-o', 'pid=,args=', '-p', children.join(',')])
        .toString()
        .split('\n')
        .filter((line) => /walsender/.test(line))
        .map((line) => Number(line.trim().split(/\s+/)[0]))
        .filter(Boolean);
    } catch {
      return [];
    }
  }

  resumeNode(name: HaNodeName): void {
    this.log(`SIGCONT ${name}`);
    for (const pid of this.postgresProcesses(name).reverse()) signalProcess(pid, 'SIGCONT');
    signalGroup(this.patroni.get(name)?.pid, 'SIGCONT');
  }

  /** A planned switchover through Patroni's REST API (what `patronictl switchover` calls). */
  async switchover(candidate?: HaNodeName): Promise<void> {
    const leader = await this.leader();
    if (!leader) throw new Error('switchover: no leader');
    const response = await fetch(`http://127.0.0.1:${this.restPort(leader)}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader, ...(candidate ? { candidate } : {}) }),
    });
    if (!response.ok) throw new Error(`switchover: ${response.status} ${await response.text()}`);
    this.log(`switchover from ${leader}${candidate ? ` to ${candidate}` : ''}`);
  }

  /** The cluster as Patroni's REST API of any answering node sees it. */
  async members(): Promise<HaMember[]> {
    for (const name of NODE_NAMES) {
      try {
        const response = await fetch(`http://127.0.0.1:${this.restPort(name)}/cluster`, {
          signal: AbortSignal.timeout(1_000),
        });
        if (response.ok) return ((await response.json()) as { members: HaMember[] }).members;
      } catch {
        // Down or stopped; ask the next.
      }
    }
    return [];
  }

  async leader(): Promise<HaNodeName | undefined> {
    return this.runningWithRole('leader');
  }

  async waitForLeader(timeoutMs: number, not?: HaNodeName): Promise<HaNodeName> {
    let found: HaNodeName | undefined;
    await this.waitFor(
      'a leader',
      async () => {
        found = await this.leader();
        return found !== undefined && found !== not;
      },
      timeoutMs,
    );
    return found!;
  }

  /** Waits until `count` standbys stream from the leader (its pg_stat_replication). */
  async waitForStreaming(count: number, timeoutMs: number): Promise<void> {
    await this.waitFor(
      `${count} streaming standbys`,
      async () => {
        const leader = await this.leader();
        if (!leader) return false;
        // By member name: pg_basebackup's WAL stream of a standby being cloned also shows as
        // 'streaming'. Patroni's standbys connect with application_name = their member name.
        const streaming = this.psql(
          leader,
          `select count(*) from pg_stat_replication where state = 'streaming' and application_name in (${NODE_NAMES.map((n) => `'${n}'`).join(', ')})`,
        );
        return Number(streaming) >= count;
      },
      timeoutMs,
    );
  }

  /**
   * Steady state: two standbys streaming and, in a synchronous mode, one published as the
   * synchronous standby (until then a lost primary is not replaced): inject failures from here.
   */
  async waitForHealthy(timeoutMs: number): Promise<void> {
    await this.waitForStreaming(2, timeoutMs);
    if (this.mode === 'async') return;
    await this.waitFor(
      'synchronous standby',
      async () => (await this.syncStandby()) !== undefined,
      timeoutMs,
    );
  }

  /** psql's argv for one statement on a node's unix socket, as the cluster's OS user. */
  private psqlArgv(name: HaNodeName, statement: string, database: string): [string, string[]] {
    const [program, ...args] = [
      ...(this.user?.prefix ?? []),
      `${POSTGRES_BIN_DIR}/psql`,
      ...['-h', this.dir, '-p', String(this.pgPort(name)), '-U', 'postgres', '-d', database],
      ...['-tAc', statement],
    ];
    return [program!, args];
  }

  /** One statement through psql on a node, its output trimmed. */
  psql(name: HaNodeName, statement: string, database = 'postgres'): string {
    const [program, args] = this.psqlArgv(name, statement, database);
    const options = { cwd: this.dir, timeout: 10_000, encoding: 'utf8' } as const;
    return execFileSync(program, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  }

  /** `psql` without blocking the event loop (clients keep running while a node is read). */
  async query(name: HaNodeName, statement: string, database = 'postgres'): Promise<string> {
    const [program, args] = this.psqlArgv(name, statement, database);
    const { stdout } = await execFileAsync(program, args, { cwd: this.dir, timeout: 10_000 });
    return stdout.trim();
  }

  /** Patroni's synchronous standby, if it names one. */
  async syncStandby(): Promise<HaNodeName | undefined> {
    return this.runningWithRole('sync_standby');
  }

  private async runningWithRole(role: string): Promise<HaNodeName | undefined> {
    const members = await this.members();
    return members.find((m) => m.role === role && m.state === 'running')?.name as HaNodeName;
  }

  private async waitFor(
    what: string,
    check: () => Promise<boolean>,
    timeoutMs: number,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.startFailure) throw this.startFailure;
      try {
        if (await check()) return;
      } catch {
        // Not up yet.
      }
      await sleep(250);
    }
    throw new Error(`HA cluster: no ${what} within ${timeoutMs} ms (logs in ${this.dir})`);
  }

  /** Creates a database on the leader (idempotent). */
  async createDatabase(database: string): Promise<void> {
    const leader = await this.waitForLeader(30_000);
    if (this.psql(leader, `select 1 from pg_database where datname = '${database}'`) !== '1') {
      this.psql(leader, `create database "${database}"`);
    }
    // Until a standby has replayed it, a multi-host client that reaches that standby first is
    // refused (FATAL: database does not exist) instead of moving on to the next host.
    await this.waitFor(
      `database ${database} on every node`,
      async () =>
        this.nodes.every(
          (n) => this.psql(n, `select 1 from pg_database where datname = '${database}'`) === '1',
        ),
      30_000,
    );
  }

  /** Stops every process (kill -9: a throw-away cluster) and removes its directory. */
  async stop({ keep = false } = {}): Promise<void> {
    // Stopped while it starts (Ctrl-C): the exits below are no failed start.
    this.starting = false;
    // One line, not a SIGCONT and a kill -9 per node: on a presenter's screen those read as faults.
    this.log(`stopping ${NODE_NAMES.join(', ')} and etcd (kill -9: a throw-away cluster)`);
    for (const name of NODE_NAMES) {
      this.signalNode(name, 'SIGCONT');
      this.signalNode(name, 'SIGKILL');
    }
    signalGroup(this.etcd?.pid, 'SIGKILL');
    await sleep(300);
    this.tether.release();
    if (!keep) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts a cluster and waits until it has a leader and two streaming standbys. */
export async function startHaCluster(options: HaClusterOptions): Promise<HaCluster> {
  const cluster = new HaCluster(options);
  try {
    await cluster.start();
  } catch (error) {
    await cluster.stop({ keep: true });
    throw error;
  }
  return cluster;
}
