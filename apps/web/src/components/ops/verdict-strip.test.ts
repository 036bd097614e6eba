import type { OpsLedgerResult, OpsLedgerRow } from '@once/api/ops';
import { describe, expect, it } from 'vitest';
import { ledgerLine, pressOfThisScene, stripParts } from './verdict-strip.tsx';

function row(
  verdict: OpsLedgerRow['verdict'],
  chargeCount: number,
  id: string,
  createdAt = '2026-11-25T16:00:00Z',
): OpsLedgerRow {
  return {
    paymentId: id,
    appStatus: 'succeeded',
    appAmount: 1000,
    appCurrency: 'usd',
    appPaymentIntentId: null,
    downstreamKey: `once_pay_${id}`,
    createdAt,
    processor: {
      chargeCount,
      chargedAmount: chargeCount * 1000,
      currency: 'usd',
      paymentIntentId: null,
      paymentIntentIds: [],
    },
    verdict,
    reason: '',
  };
}

const result = (rows: OpsLedgerRow[]): OpsLedgerResult => ({
  processor: 'reachable',
  processorAccountId: 'acct_a',
  processorError: null,
  checkedAt: '2026-11-25T16:00:00Z',
  rows,
});

describe('ledgerLine', () => {
  it('counts payments and charges, and says they all agree', () => {
    expect(ledgerLine(result([row('agrees', 1, 'a'), row('agrees', 0, 'b')]))).toEqual({
      tone: 'ok',
      text: '2 payments, 1 charge, all agree',
    });
  });
  it('names what disagrees, the alarms first', () => {
    const line = ledgerLine(
      result([row('agrees', 1, 'a'), row('app_behind', 1, 'b'), row('double_charge', 2, 'c')]),
    );
    expect(line).toEqual({
      tone: 'alarm',
      text: '3 payments, 4 charges: 1 charged twice, 1 charged and still being recorded, 1 agrees',
    });
  });
  it('says when the charges could not be checked, and when the page is full', () => {
    const unreachable = {
      ...result([row('unverified', 0, 'a')]),
      processor: 'unreachable' as const,
    };
    expect(ledgerLine(unreachable, 1).text).toBe(
      'the latest 1 payment; charges not checked (processor unreachable)',
    );
  });
  it('counts from the scene mark, but an earlier alarm still shows', () => {
    const earlier = row('agrees', 1, 'a', '2026-11-25T16:00:00Z');
    const scene = [row('agrees', 1, 'b', '2026-11-25T16:05:00Z')];
    const mark = '2026-11-25T16:04:00Z';
    expect(ledgerLine(result([earlier, ...scene]), 50, mark)).toEqual({
      tone: 'ok',
      text: '1 payment, 1 charge, all agree',
    });
    expect(ledgerLine(result([earlier]), 50, mark).text).toBe(
      '0 payments, 0 charges, nothing to compare yet',
    );
    const twice = row('double_charge', 2, 'c', '2026-11-25T16:00:00Z');
    expect(ledgerLine(result([twice, ...scene]), 50, mark)).toEqual({
      tone: 'alarm',
      text: '1 payment, 1 charge, all agree; before this scene: 1 charged twice',
    });
  });
});

describe('the strip’s parts', () => {
  const parts = [
    { name: 'postgres', state: 'up' as const, restarts: 1 },
    { name: 'processor', state: 'up' as const, restarts: 0 },
    { name: 'worker-1', state: 'restarting' as const, restarts: 2 },
    { name: 'web', state: 'up' as const, restarts: 0 },
  ];

  it('show each part’s restarts beside its state, in the order the launcher lists them', () => {
    expect(stripParts(parts, { webAnswering: true }).map((p) => `${p.name}: ${p.text}`)).toEqual([
      'postgres: up, restarted 1 time',
      'processor: up',
      'worker-1: restarting, restarted 2 times',
      'web: up',
    ]);
  });

  it('a web server that stopped answering (killed) shows as restarting, not as its last state', () => {
    const shown = stripParts(parts, { webAnswering: false });
    expect(shown.find((p) => p.name === 'web')).toMatchObject({
      state: 'restarting',
      text: 'restarting',
    });
    expect(shown.map((p) => p.name)).toEqual(['postgres', 'processor', 'worker-1', 'web']);
  });

  it('several webs behind the proxy (`--webs 3`) are each treated as the web', () => {
    const webs = [
      ...parts.filter((p) => p.name !== 'web'),
      { name: 'proxy', state: 'up' as const, restarts: 0 },
      ...[1, 2, 3].map((n) => ({ name: `web-${n}`, state: 'up' as const, restarts: 0 })),
    ];
    const shown = stripParts(webs, { webAnswering: false });
    expect(shown.filter((p) => p.state === 'restarting').map((p) => p.name)).toEqual([
      'worker-1',
      'web-1',
      'web-2',
      'web-3',
    ]);
    expect(shown.find((p) => p.name === 'proxy')?.state).toBe('up');
  });
});

describe('the strip’s last switch', () => {
  const press = { submittedAt: Date.parse('2026-11-25T16:00:00Z') };
  it('is shown during its scene and dropped once a new scene starts after it', () => {
    expect(pressOfThisScene(press, null)).toBe(press);
    expect(pressOfThisScene(press, '2026-11-25T15:59:00Z')).toBe(press);
    expect(pressOfThisScene(press, '2026-11-25T16:00:01Z')).toBeUndefined();
    expect(pressOfThisScene(undefined, null)).toBeUndefined();
  });
});
