import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestDatabase } from '@once/db/testing';
import {
  type ObservedResponse,
  openApiViolations,
  type ServedHandler,
  startWebTestServer,
  type WebTestServer,
} from '@once/web/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../scripts/system/start-system.ts';

/**
 * The README's curl examples, run as written (only BASE points at a test server serving the
 * web app's route handlers), each response checked against the OpenAPI description.
 */
function readmeExamples(): string {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const marker = readme.indexOf('<!-- api-examples');
  expect(marker, 'README.md has the api-examples block').toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker));
  return block![1]!;
}

function runShell(
  script: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-eu', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `curl -si` output, one or more HTTP/1.1 messages back to back, as responses. */
function parseResponses(output: string): ObservedResponse[] {
  return output
    .split(/(?=HTTP\/1\.1 \d{3} )/)
    .filter((part) => part.startsWith('HTTP/1.1 '))
    .map((part) => {
      const end = part.indexOf('\r\n\r\n');
      const [statusLine, ...headerLines] = part.slice(0, end).split('\r\n');
      const headers = new Headers();
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      return { status: Number(statusLine!.split(' ')[1]), headers, body: part.slice(end + 4) };
    });
}

describe('the README REST API examples', () => {
  let database: TestDatabase;
  let server: ServedHandler;
  let web: WebTestServer | undefined;

  beforeAll(async () => {
    web = await startWebTestServer('readme_api', {
      SESSION_SECRET: 'readme-test-session-secret-0123',
    });
    ({ database, server } = web);
  });
  afterAll(async () => {
    await web?.close();
  });

  it('run as written and answer what the description documents', async () => {
    const examples = readmeExamples();
    expect(examples).toMatch(/^BASE=http:\/\/localhost:3000$/m);
    // The README's key is a placeholder for the one the banner prints; the test server seeds
    // the tests' fixed key.
    expect(examples).toMatch(/^API_KEY=once_demo_\S+ /m);
    const script = examples
      .replace(/^BASE=.*$/m, `BASE=${server.url}`)
      .replace(/^API_KEY=.*$/m, 'API_KEY=once_test_tenant_a');
    const { code, stdout, stderr } = await runShell(script);
    expect(code, stderr).toBe(0);

    const responses = parseResponses(stdout);
    expect(responses.map((r) => r.status)).toEqual([201, 201, 422, 200, 200]);
    const [created, replayed, reused, read, description] = responses as [
      ObservedResponse,
      ObservedResponse,
      ObservedResponse,
      ObservedResponse,
      ObservedResponse,
    ];
    expect(created.headers.get('idempotent-replayed')).toBeNull();
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toBe(created.body);
    expect(JSON.parse(reused.body)).toMatchObject({ code: 'idempotency_key_reused' });
    const { paymentId } = JSON.parse(created.body) as { paymentId: string };
    expect(JSON.parse(read.body)).toMatchObject({ paymentId, status: 'processing' });

    const checks: [string, string, ObservedResponse][] = [
      ['POST', '/api/v1/payments', created],
      ['POST', '/api/v1/payments', replayed],
      ['POST', '/api/v1/payments', reused],
      ['GET', `/api/v1/payments/${paymentId}`, read],
      ['GET', '/api/openapi', description],
    ];
    for (const [method, route, response] of checks) {
      expect(openApiViolations(method, route, response)).toEqual([]);
    }
    const [row] = await database.client.sql<{ n: number }[]>`
      select count(*)::int as n from payments where id = ${paymentId}`;
    expect(row!.n).toBe(1);
  });
});
