import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** One service of a docker-compose file, normalised (anchors and `<<` merges applied). */
export interface ComposeService {
  name: string;
  image?: string;
  command: string[];
  environment: Record<string, string>;
  workingDir?: string;
  /** `depends_on` service -> condition (`service_started` when the short form is used). */
  dependsOn: Record<string, string>;
  healthcheck?: string[];
  replicas: number;
  /** Container ports published to the host (`"4100:4100"` -> 4100). */
  publishedPorts: number[];
  volumes: string[];
  restart?: string;
}

type Raw = Record<string, unknown>;

function environmentOf(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (Array.isArray(raw)) {
    return Object.fromEntries(
      raw.map((entry) => {
        const [name, ...value] = String(entry).split('=');
        return [name!, value.join('=')];
      }),
    );
  }
  return Object.fromEntries(Object.entries(raw as Raw).map(([k, v]) => [k, String(v ?? '')]));
}

function dependsOnOf(raw: unknown): Record<string, string> {
  if (!raw) return {};
  if (Array.isArray(raw)) return Object.fromEntries(raw.map((n) => [String(n), 'service_started']));
  return Object.fromEntries(
    Object.entries(raw as Raw).map(([name, spec]) => [
      name,
      String((spec as Raw | null)?.condition ?? 'service_started'),
    ]),
  );
}

function commandOf(raw: unknown): string[] {
  if (raw === undefined) return [];
  // The string form is split on spaces by compose (no shell); none of ours needs quoting.
  return Array.isArray(raw) ? raw.map(String) : String(raw).split(/\s+/).filter(Boolean);
}

/**
 * Compose's interpolation of one string from the project environment: `$$` is a `$`; `${NAME}`
 * and `$NAME` its value; `${NAME:-default}` / `${NAME-default}` the default when unset-or-empty
 * / unset; `${NAME:?message}` / `${NAME?message}` refuses then, as `docker compose up` does.
 */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(
    /\$(\$)|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (
      _whole,
      dollar?: string,
      braced?: string,
      colon?: string,
      kind?: string,
      arg?: string,
      bare?: string,
    ) => {
      if (dollar) return '$';
      const name = (braced ?? bare)!;
      const set = env[name];
      const missing = colon ? !set : set === undefined;
      if (kind === '-' && missing) return arg ?? '';
      if (kind === '?' && missing) {
        throw new Error(`required variable ${name} is missing a value: ${arg}`);
      }
      return set ?? '';
    },
  );
}

/** Every string value in a parsed document, interpolated (not the keys, as compose). */
function interpolateAll(node: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof node === 'string') return interpolate(node, env);
  if (Array.isArray(node)) return node.map((item) => interpolateAll(item, env));
  if (node && typeof node === 'object') {
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, interpolateAll(value, env)]),
    );
  }
  return node;
}

/**
 * Reads a docker-compose file the way `docker compose config` would for the keys Once uses,
 * every value interpolated from `projectEnv` (what compose reads from `.env` and the shell).
 */
export function readComposeFile(
  file: string,
  projectEnv: Record<string, string | undefined> = {},
): ComposeService[] {
  const parsed = parse(readFileSync(file, 'utf8'), { merge: true });
  const document = interpolateAll(parsed, projectEnv) as { services: Raw };
  return Object.entries(document.services).map(([name, value]) => {
    const raw = value as Raw;
    const healthcheck = (raw.healthcheck as Raw | undefined)?.test;
    return {
      name,
      ...(raw.image ? { image: String(raw.image) } : {}),
      command: commandOf(raw.command),
      environment: environmentOf(raw.environment),
      ...(raw.working_dir ? { workingDir: String(raw.working_dir) } : {}),
      dependsOn: dependsOnOf(raw.depends_on),
      ...(Array.isArray(healthcheck) ? { healthcheck: healthcheck.map(String) } : {}),
      replicas: Number((raw.deploy as Raw | undefined)?.replicas ?? 1),
      publishedPorts: ((raw.ports as unknown[] | undefined) ?? []).map((p) =>
        Number(String(p).split(':').at(-1)),
      ),
      volumes: ((raw.volumes as unknown[] | undefined) ?? []).map(String),
      ...(raw.restart !== undefined ? { restart: String(raw.restart) } : {}),
    };
  });
}

/** The `ENV` lines of a Dockerfile (`ENV A=1` and `ENV A 1` forms). */
export function readDockerfileEnv(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^ENV\s+(.+)$/.exec(line.trim());
    if (!match) continue;
    const rest = match[1]!;
    if (rest.includes('=')) {
      for (const pair of rest.split(/\s+/)) {
        const [name, ...value] = pair.split('=');
        env[name!] = value.join('=').replace(/^"|"$/g, '');
      }
    } else {
      const [name, ...value] = rest.split(/\s+/);
      env[name!] = value.join(' ');
    }
  }
  return env;
}

/** The Dockerfile's `WORKDIR` (where the repository is copied: `/app`). */
export function readDockerfileWorkdir(file: string): string {
  const match = /^WORKDIR\s+(\S+)/m.exec(readFileSync(file, 'utf8'));
  return match?.[1] ?? '/';
}
