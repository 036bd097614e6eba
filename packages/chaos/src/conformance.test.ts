import { describe, expect, it } from 'vitest';
import { checkConformance, type ProbeAnswer } from './conformance.ts';
import type { UpstreamAttempt } from './fault-proxy.ts';

const attempt = (overrides: Partial<UpstreamAttempt>): UpstreamAttempt => ({
  key: 'k1',
  bodyDigest: 'b1',
  origin: 'client',
  startedAt: 0,
  endedAt: 10,
  status: 201,
  contentType: 'application/json',
  replayed: false,
  body: '{"order":1}',
  delivered: true,
  ...overrides,
});

const names = (
  attempts: UpstreamAttempt[],
  preset: 'ietf' | 'stripe',
  probes: ProbeAnswer[] = [],
) => checkConformance({ preset, attempts, probes }).map((v) => v.kind);

describe('checkConformance', () => {
  it('passes a retry that replays the first answer, marked, under both presets', () => {
    const retry = attempt({ startedAt: 20, endedAt: 25, replayed: true });
    expect(names([attempt({}), retry], 'stripe')).toEqual([]);
    expect(names([attempt({}), retry], 'ietf')).toEqual([]);
  });

  it('names a later different success response_not_replayed, an overlapping one in_flight_not_rejected', () => {
    const later = attempt({ startedAt: 20, endedAt: 30, body: '{"order":2}' });
    const overlapping = attempt({ startedAt: 5, endedAt: 12, body: '{"order":2}' });
    expect(names([attempt({}), later], 'ietf')).toEqual(['response_not_replayed']);
    expect(names([attempt({}), overlapping], 'ietf')).toEqual(['in_flight_not_rejected']);
  });

  it('names an identical but unmarked replay replay_not_marked under stripe only', () => {
    const unmarked = attempt({ startedAt: 20, endedAt: 25 });
    expect(names([attempt({}), unmarked], 'stripe')).toEqual(['replay_not_marked']);
    expect(names([attempt({}), unmarked], 'ietf')).toEqual([]);
  });

  it('does not compare answers to the same key with another body', () => {
    const other = attempt({ bodyDigest: 'b2', startedAt: 20, endedAt: 25, body: '{"order":2}' });
    expect(names([attempt({}), other], 'stripe')).toEqual([]);
  });

  it('names a 409 that is not problem+json under ietf', () => {
    const conflict = attempt({ status: 409, contentType: 'application/json' });
    expect(names([conflict], 'ietf')).toEqual(['error_not_problem_json']);
    expect(names([conflict], 'stripe')).toEqual([]);
  });

  it('names each ietf probe whose expected status did not come', () => {
    const json = { contentType: 'application/problem+json', body: '{}' };
    const probes: ProbeAnswer[] = [
      { probe: 'missing_key', key: null, statuses: [201], answers: [{ status: 201, ...json }] },
      { probe: 'reused_key', key: 'r', statuses: [201], answers: [{ status: 201, ...json }] },
      {
        probe: 'in_flight',
        key: 'f',
        statuses: [201, 201],
        answers: [
          { status: 201, ...json, body: '{"order":1}' },
          { status: 201, ...json, body: '{"order":2}' },
        ],
      },
      {
        probe: 'in_flight',
        key: 'g',
        statuses: [201, 201],
        answers: [
          { status: 201, ...json, body: '{"order":3}' },
          { status: 201, ...json, body: '{"order":3}' },
        ],
      },
    ];
    expect(names([], 'ietf', probes)).toEqual([
      'missing_key_not_rejected',
      'reused_key_not_rejected',
      'in_flight_not_rejected',
    ]);
  });

  it('names a key with two charges double_charge', () => {
    const violations = checkConformance({
      preset: 'stripe',
      attempts: [],
      probes: [],
      charges: [{ key: 'a' }, { key: 'b' }, { key: 'a' }],
    });
    expect(violations).toEqual([{ kind: 'double_charge', key: 'a', detail: '2 charges' }]);
  });
});
