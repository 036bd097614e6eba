import type { FormParams, FormValue } from './form-params.ts';
import { invalidParam } from './stripe-error.ts';

/** Typed readers for decoded form params; each throws Stripe's 400 on a wrong shape. */

export function readString(params: FormParams, name: string): string | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidParam(name, `Invalid string: ${name}`);
  return value;
}

export function readInteger(params: FormParams, name: string): number | undefined {
  const value = readString(params, name);
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw invalidParam(name, `Invalid integer: ${value}`, 'parameter_invalid_integer');
  }
  return Number(value);
}

export function readBoolean(params: FormParams, name: string): boolean | undefined {
  const value = readString(params, name);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') {
    throw invalidParam(name, `Invalid boolean: ${value}`, 'parameter_invalid_boolean');
  }
  return value === 'true';
}

/** `metadata[k]=v`; Stripe's limits: 50 keys, key <= 40 chars, value <= 500 chars. */
export function readMetadata(params: FormParams, name = 'metadata'): Record<string, string> {
  const value: FormValue | undefined = params[name];
  if (value === undefined || value === '') return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidParam(name, 'Invalid metadata: must be a hash of strings');
  }
  const entries = Object.entries(value);
  if (entries.length > 50) throw invalidParam(name, 'Invalid metadata: at most 50 keys');
  const out: Record<string, string> = {};
  for (const [key, v] of entries) {
    if (typeof v !== 'string' || key.length > 40 || v.length > 500) {
      throw invalidParam(`${name}[${key}]`, `Invalid metadata value for key ${key}`);
    }
    out[key] = v;
  }
  return out;
}

export function readObject(params: FormParams, name: string): FormParams | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidParam(name, `Invalid hash: ${name}`);
  }
  return value;
}

/** An absolute http(s) URL (`return_url`); Stripe's `url_invalid` otherwise. */
export function readUrl(params: FormParams, name: string): string | undefined {
  const value = readString(params, name);
  if (value === undefined) return undefined;
  const parsed = URL.canParse(value) ? new URL(value) : undefined;
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') {
    throw invalidParam(name, `Not a valid URL: ${name}`, 'url_invalid');
  }
  return value;
}
