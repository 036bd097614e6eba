import { describe, expect, it } from 'vitest';
import { configuredHostNames, hostAllowed } from './allowed-host.ts';

describe('hostAllowed: a rebound name is refused, the server’s own names are answered', () => {
  it.each([
    '127.0.0.1:3000',
    '127.0.0.1',
    '[::1]:3000',
    '192.168.1.20:3000',
    'localhost:3000',
    'LOCALHOST',
    'web:3000',
    'processor:4100',
    'shop.example.com',
    'shop.example.com.:443',
  ])('answers %s', (host) => {
    expect(hostAllowed(host, ['shop.example.com'])).toBe(true);
  });

  it.each([
    'rebind.attacker.example:3000',
    '127.0.0.1.nip.io:3000',
    'localhost.attacker.example',
    'shop.example.com.attacker.example',
    '',
    ' ',
    'a b:3000',
    'user@127.0.0.1',
    '[not-v6]:3000',
  ])('refuses %j', (host) => {
    expect(hostAllowed(host, ['shop.example.com'])).toBe(false);
  });

  it('refuses a missing header', () => {
    expect(hostAllowed(undefined, [])).toBe(false);
  });

  it('configured names come from public URLs and a comma-separated list', () => {
    expect(
      configuredHostNames(
        ['https://shop.example.com:8443/x', undefined, 'not a url', 'http://[2001:db8::1]/'],
        ' admin.example.com, ,other.example ',
      ),
    ).toEqual(['shop.example.com', '2001:db8::1', 'admin.example.com', 'other.example']);
  });
});
