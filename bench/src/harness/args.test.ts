import { describe, expect, it } from 'vitest';
import { parseArgs } from './args.ts';

describe('parseArgs', () => {
  it('reads --quick and repeated or comma-separated --only', () => {
    expect(parseArgs(['--', '--quick', '--only', 'overhead', '--only=peers,e2e'])).toEqual({
      quick: true,
      only: ['overhead', 'peers', 'e2e'],
      render: [],
    });
  });

  it('reads repeated --render <file>', () => {
    expect(parseArgs(['--render', 'bench/results/x.json', '--render', 'y.json'])).toEqual({
      quick: false,
      only: [],
      render: ['bench/results/x.json', 'y.json'],
    });
  });

  it('refuses unknown arguments and a bare --only', () => {
    expect(() => parseArgs(['--fast'])).toThrow(/unknown argument/);
    expect(() => parseArgs(['--only'])).toThrow(/needs a scenario/);
  });
});
