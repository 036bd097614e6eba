import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEMO_API_KEY_VARIABLES, SECRET_VARIABLES } from '@once/env';
import { verifyInvariant } from '@once/invariant';
import { openApiViolations } from '@once/web/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { repoRoot } from '../scripts/system/start-system.ts';
import { TEST_NEXT_DIST_DIR } from '../scripts/system/web-build.ts';
import { readComposeFile } from './support/compose-file.ts';
import { composeSecretsEnv } from './support/compose-secrets.ts';
import {
  loopbackAliasesAvailable,
  type RunningComposeTopology,
  startComposeTopology,
} from './support/compose-topology.ts';
import {
  expectFreshSecrets,
  runningEnvironment,
  secretsHeldBy,
} from './support/running-secrets.ts';

/**
 * docker-compose.yml, run as written but without Docker (there is no Docker engine on CI
 * machines): every service with the file's own command and environment on a loopback address
 * of its own, so a server that listens on 127.0.0.1 instead of its configured address is as
 * unreachable here as it would be in its container. One payment through the REST API, then
 * the processor's ledger (over its published port) and both databases agree, and every app
 * exits 0 on SIGTERM, as `docker compose stop` sends it. Before that, the same deployment's
 * secrets: every service holds only what .env gave it, made per deployment.
 */
const verbose = process.env.ONCE_TEST_VERBOSE === '1';
const webDir = path.join(repoRoot, 'apps/web');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let topology: RunningComposeTopology | undefined;
const logLines: string[] = [];
/** What `sh scripts/compose-secrets.sh` writes to .env: fresh secrets, as a deployment's. */
let projectEnv: Record<string, string> = {};

const aliases = await loopbackAliasesAvailable();
if (!aliases) {
  console.warn(
    'compose-topology skipped: 127.0.0.2 is not a local address here (macOS: sudo ifconfig lo0 alias 127.0.0.2 up, up to 127.0.0.6)',
  );
}

describe.skipIf(!aliases)(
  'docker-compose.yml, run service by service on separate addresses',
  () => {
    beforeAll(async () => {
      // The image's `next build`: made once for the whole run by test/web-build-global-setup.ts.
      expect(
        existsSync(path.join(webDir, TEST_NEXT_DIST_DIR, 'BUILD_ID')),
        `apps/web/${TEST_NEXT_DIST_DIR} is built`,
      ).toBe(true);
      projectEnv = composeSecretsEnv(repoRoot);
      topology = await startComposeTopology({
        repoRoot,
        projectEnv,
        hostEnv: { ONCE_NEXT_DIST_DIR: TEST_NEXT_DIST_DIR },
        log: (line) => {
          logLines.push(line);
          if (verbose) process.stdout.write(`${line}\n`);
        },
        readyTimeoutMs: 60_000,
      });
    }, 240_000);

    afterAll(async () => {
      await topology?.stop();
    });

    // First: the payment test below stops the topology.
    it('every service holds only the secrets .env gave it, made per deployment', () => {
      const running = topology!.instances.filter((i) => i.child.exitCode === null);
      const held = running.flatMap((i) =>
        secretsHeldBy(i.name, runningEnvironment(i.child.pid, i.env)),
      );
      expectFreshSecrets(repoRoot, held, logLines, [...SECRET_VARIABLES, 'DATABASE_URL password']);
      // Least privilege: the workers hold no secret but their database password and the key
      // that seals stored answers (their webhook backfill writes the web's key rows).
      const workerSecrets = held.filter((h) => h.process.startsWith('worker'));
      expect(new Set(workerSecrets.map((h) => h.variable))).toEqual(
        new Set(['DATABASE_URL password', 'PROCESSOR_DATABASE_URL password', 'ONCE_ANSWER_KEY']),
      );
      // The merchants' API keys: the seed's (migrate, done by now, and web) only.
      const isDemoApiKey = (name: string) =>
        (DEMO_API_KEY_VARIABLES as readonly string[]).includes(name);
      const apiKeyHolders = held.filter((h) => isDemoApiKey(h.variable)).map((h) => h.process);
      expect(new Set(apiKeyHolders)).toEqual(new Set(['web']));
    });

    it('pays once through the REST API; the ledger holds one charge; every app exits 0 on SIGTERM', async () => {
      const running = topology!;
      const web = running.resolveUrl('http://web:3000');
      const processor = running.resolveUrl('http://processor:4100');
      // The checkout page and its static assets come from the same server.
      const page = await fetch(`${web}/`);
      const html = await page.text();
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const asset = /\/_next\/static\/[^"]+\.js/.exec(html)?.[0];
      expect(asset, 'the page references its scripts').toBeDefined();
      expect((await fetch(`${web}${asset}`)).status).toBe(200);

      // The merchant's API key is this deployment's own (.env), not the public test key.
      const apiKey = projectEnv.ONCE_DEMO_API_KEY_TENANT_A!;
      expect(apiKey).toMatch(/^once_live_[0-9a-f]{64}$/);
      const key = randomUUID();
      const pay = (bearer = apiKey) =>
        fetch(`${web}/api/v1/payments`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${bearer}`,
            'idempotency-key': key,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ lines: [{ productId: 'book_sre', quantity: 1 }] }),
        });
      // Nobody who read the repository pays (or signs in) as a compose deployment's merchant.
      for (const publicKey of ['once_test_tenant_a', 'once_test_tenant_b']) {
        const refused = await pay(publicKey);
        expect(refused.status, `Bearer ${publicKey}`).toBe(401);
      }
      const created = await pay();
      const createdBody = await created.text();
      expect(created.status, createdBody).toBe(201);
      expect(
        openApiViolations('POST', '/api/v1/payments', {
          status: created.status,
          headers: created.headers,
          body: createdBody,
        }),
      ).toEqual([]);
      const { paymentId } = JSON.parse(createdBody) as { paymentId: string };

      // The worker charges through http://processor:4100; the processor's webhook comes back
      // through http://web:3000. Either settles the payment.
      let view: { status: string; terminal: boolean } = { status: 'processing', terminal: false };
      const deadline = Date.now() + 30_000;
      while (!view.terminal && Date.now() < deadline) {
        await sleep(300);
        const read = await fetch(`${web}/api/v1/payments/${paymentId}`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        const body = await read.text();
        expect(
          openApiViolations('GET', `/api/v1/payments/${paymentId}`, {
            status: read.status,
            headers: read.headers,
            body,
          }),
        ).toEqual([]);
        view = JSON.parse(body);
      }
      const workerLogs = logLines.filter((l) => l.startsWith('worker')).slice(-20);
      expect(view.status, workerLogs.join('\n')).toBe('succeeded');

      // A retry of the same request is a replay, not a second charge.
      const again = await pay();
      expect(again.headers.get('idempotent-replayed')).toBe('true');

      // The ledger, read from the host through the processor's published port.
      const processorService = running.instances.find((i) => i.name === 'processor')!;
      const ledger = await fetch(
        `${processor}/admin/ledger?${new URLSearchParams({ 'metadata[payment_id]': paymentId })}`,
        { headers: { 'x-admin-token': processorService.env.PROCESSOR_ADMIN_TOKEN! } },
      );
      expect(ledger.status).toBe(200);
      expect(await ledger.json()).toMatchObject({ charge_count: 1, charged_amount: 3999 });
      const report = await verifyInvariant({
        databaseUrl: processorService.env.DATABASE_URL!,
        processorDatabaseUrl: processorService.env.PROCESSOR_DATABASE_URL!,
        converged: true,
        expectedCheckouts: [{ tenantId: 'tenant_a', idempotencyKey: key }],
      });
      expect(report.violations).toEqual([]);

      // `docker compose stop`: SIGTERM to each container's process; a requested stop is exit 0.
      const exits = await running.stop();
      topology = undefined;
      expect(exits.map(({ name, code, signal }) => ({ name, code, signal }))).toEqual(
        ['web', 'worker-2', 'worker-1', 'processor', 'migrate'].map((name) => ({
          name,
          code: 0,
          signal: null,
        })),
      );
    }, 90_000);
  },
);

/**
 * docker-compose.webs.yml on top of docker-compose.yml, read as compose merges them (a
 * service's environment merged by name, `ports: !reset []` dropped): three webs reached only
 * through HAProxy, the web and the workers on PgBouncer in transaction mode with a direct URL
 * for their sessions, and the proxy's and the pooler's own files as the real binaries read them.
 */
describe('docker-compose.webs.yml: several webs behind HAProxy, PgBouncer in front', () => {
  const overlayFile = path.join(repoRoot, 'docker-compose.webs.yml');
  // Any value for the variables both files require: this is about their shape, not secrets.
  const anyEnv = new Proxy({} as Record<string, string>, {
    get: (_, name) => (name === 'POSTGRES_PASSWORD' ? 'pw' : `value-of-${String(name)}`),
  });
  const base = Object.fromEntries(
    readComposeFile(path.join(repoRoot, 'docker-compose.yml'), anyEnv).map((s) => [s.name, s]),
  );
  const overlay = Object.fromEntries(readComposeFile(overlayFile, anyEnv).map((s) => [s.name, s]));
  const environment = (name: string) => ({
    ...base[name]?.environment,
    ...overlay[name]?.environment,
  });
  const hostOf = (url: string | undefined) => (url ? new URL(url).host : undefined);

  it('publishes the proxy only; three webs, the webs and workers pooled, the processor direct', () => {
    const document = parseDocument(readFileSync(overlayFile, 'utf8'));
    expect((document.getIn(['services', 'web', 'ports'], true) as { tag?: string }).tag).toBe(
      '!reset',
    );
    expect(overlay.proxy!.publishedPorts).toEqual(base.web!.publishedPorts);
    expect(overlay.web!.replicas).toBe(3);
    for (const app of ['web', 'worker']) {
      const env = environment(app);
      expect(hostOf(env.DATABASE_URL), app).toBe('pooler:6432');
      expect(env.DATABASE_POOL_MODE, app).toBe('transaction');
      expect(env.DATABASE_DIRECT_URL, app).toBe(base[app]!.environment.DATABASE_URL);
    }
    // The web still holds what the base gives it, and reads the client from the proxy.
    expect(environment('web')).toMatchObject({
      SESSION_SECRET: base.web!.environment.SESSION_SECRET,
      ONCE_TRUST_PROXY: '1',
    });
    const processor = environment('processor');
    expect(processor.PROCESSOR_DATABASE_URL).toBe(
      base.processor!.environment.PROCESSOR_DATABASE_URL,
    );
    expect(hostOf(processor.PROCESSOR_WEBHOOK_URL)).toBe('proxy:3000');
    expect(environment('migrate').DATABASE_URL).toBe(base.migrate!.environment.DATABASE_URL);
  });

  it("the proxy's configuration is valid HAProxy, aimed at the webs' port and health URL", () => {
    const proxy = overlay.proxy!;
    const mounted = proxy.volumes.find((v) => v.endsWith(`:${proxy.command.at(-1)}:ro`));
    expect(mounted, 'the config the command names is mounted').toBeDefined();
    const cfgFile = path.join(repoRoot, mounted!.split(':')[0]!);
    const check = spawnSync('/usr/sbin/haproxy', ['-c', '-f', cfgFile], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
    const cfg = readFileSync(cfgFile, 'utf8');
    expect(cfg).toMatch(new RegExp(`server-template web- \\d+ web:${base.web!.environment.PORT}`));
    const healthPath = /fetch\('http:\/\/127\.0\.0\.1:\d+(\/[^']+)'/.exec(
      base.web!.healthcheck!.join(' '),
    )?.[1];
    expect(cfg).toContain(`uri ${healthPath} `);
  });

  it("the pooler's configuration is transaction mode on the port the apps use", () => {
    const pooler = overlay.pooler!;
    const mounted = pooler.volumes.find((v) => v.includes('pgbouncer.ini'))!;
    const ini = readFileSync(path.join(repoRoot, mounted.split(':')[0]!), 'utf8');
    const setting = (name: string) => new RegExp(`^${name} = (.*)$`, 'm').exec(ini)?.[1];
    expect(setting('pool_mode')).toBe('transaction');
    expect(setting('listen_port')).toBe(new URL(environment('web').DATABASE_URL!).port);
    expect(ini).toMatch(/^\* = host=postgres port=5432$/m);
    // The container's command writes the auth file the ini names, from POSTGRES_PASSWORD.
    const script = pooler.command.at(-1)!;
    expect(script).toContain(`> ${setting('auth_file')} &&`);
    expect(script).toContain(`exec pgbouncer ${mounted.split(':')[1]}`);
  });
});
