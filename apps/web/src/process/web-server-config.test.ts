import { describe, expect, it } from 'vitest';
import { readWebServerConfig } from './web-server-config.ts';

describe('the web server bind address (HOST, PORT)', () => {
  it('defaults to 0.0.0.0:3000', () => {
    expect(readWebServerConfig({})).toEqual({
      host: '0.0.0.0',
      port: 3000,
      trustProxy: false,
      allowedHostNames: [],
    });
  });

  it('ignores HOSTNAME (Docker sets it to the container id)', () => {
    expect(readWebServerConfig({ HOSTNAME: 'a1b2c3d4e5f6', PORT: '8080' })).toEqual({
      host: '0.0.0.0',
      port: 8080,
      trustProxy: false,
      allowedHostNames: [],
    });
  });

  it('refuses a name as HOST and a port out of range, naming the variable', () => {
    expect(() => readWebServerConfig({ HOST: 'web' })).toThrow(/^HOST must be an IP address/);
    expect(() => readWebServerConfig({ PORT: '70000' })).toThrow(/^PORT must be an integer/);
    expect(() => readWebServerConfig({ PORT: 'http' })).toThrow(/^PORT must be an integer/);
    expect(() => readWebServerConfig({ ONCE_TRUST_PROXY: 'yes' })).toThrow(/^ONCE_TRUST_PROXY/);
  });

  it('answers to the host of WEB_PUBLIC_URL and the names in ONCE_ALLOWED_HOSTS', () => {
    expect(
      readWebServerConfig({
        WEB_PUBLIC_URL: 'https://shop.example.com',
        ONCE_ALLOWED_HOSTS: 'www.shop.example.com, admin.example.com',
      }).allowedHostNames,
    ).toEqual(['shop.example.com', 'www.shop.example.com', 'admin.example.com']);
  });

  it('trusts a reverse proxy only when told (ONCE_TRUST_PROXY=1)', () => {
    expect(readWebServerConfig({ ONCE_TRUST_PROXY: '1' }).trustProxy).toBe(true);
  });
});
