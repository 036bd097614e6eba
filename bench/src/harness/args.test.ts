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

  it('reads --rounds and --round-sec for a long peers run', () => {
    expect(parseArgs(['--only', 'peers', '--rounds', '8', '--round-sec', '10'])).toEqual({
      quick: false,
      only: ['peers'],
      render: [],
      rounds: 8,
      roundSec: 10,
    });
  });

  it('refuses unknown arguments, a bare --only and rounds that are not whole numbers', () => {
    expect(() => parseArgs(['--fast'])).toThrow(/unknown argument/);
    expect(() => parseArgs(['--only'])).toThrow(/needs a scenario/);
    expect(() => parseArgs(['--rounds', '1'])).toThrow(/--rounds needs a whole number >= 2/);
    expect(() => parseArgs(['--round-sec', '2.5'])).toThrow(/--round-sec needs a whole number/);
    expect(() => parseArgs(['--round-sec'])).toThrow(/--round-sec needs/);
  });
});
