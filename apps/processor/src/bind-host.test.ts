import { describe, expect, it } from 'vitest';
import { readProcessorConfig } from './config.ts';

const base = {
  PROCESSOR_DATABASE_URL: 'postgres://localhost/once_processor',
  PROCESSOR_WEBHOOK_SECRET: 'whsec_test',
  PROCESSOR_ADMIN_TOKEN: 'test-admin',
};

describe('the processor bind address (HOST)', () => {
  it('defaults to every interface, so other containers and published ports reach it', () => {
    expect(readProcessorConfig(base).host).toBe('0.0.0.0');
  });

  it('takes an IPv4 or IPv6 literal', () => {
    expect(readProcessorConfig({ ...base, HOST: '127.0.0.1' }).host).toBe('127.0.0.1');
    expect(readProcessorConfig({ ...base, HOST: '::' }).host).toBe('::');
  });

  it('refuses a name or garbage at start, naming the variable', () => {
    expect(() => readProcessorConfig({ ...base, HOST: 'processor' })).toThrow(
      /^HOST must be an IP address to listen on .* got "processor"$/,
    );
    expect(() => readProcessorConfig({ ...base, HOST: '0.0.0.0:4100' })).toThrow(/^HOST must/);
  });
});
