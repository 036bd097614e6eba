import { invalidParam } from './stripe-error.ts';

/** A decoded Stripe request body or query: nested objects and arrays of strings. */
type FormValue = string | FormValue[] | { [key: string]: FormValue };
export type FormParams = { [key: string]: FormValue };

/**
 * Decodes Stripe's form encoding (`metadata[order]=42`, `expand[0]=latest_charge`,
 * `expand[]=x`) into nested objects. Keys that look like array indices build arrays.
 *
 * @example
 * parseFormParams('amount=100&metadata[order]=42') // { amount: '100', metadata: { order: '42' } }
 */
export function parseFormParams(encoded: string): FormParams {
  const root: Node = {};
  for (const [rawKey, value] of new URLSearchParams(encoded)) {
    const path = splitKey(rawKey);
    // Such keys would write through to Object.prototype (prototype pollution).
    if (path.length === 0 || path.some((segment) => FORBIDDEN_KEYS.has(segment))) continue;
    assign(root, path, value);
  }
  return normalizeArrays(root) as FormParams;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function splitKey(key: string): string[] {
  const first = key.indexOf('[');
  if (first === -1) return [key];
  const parts = [key.slice(0, first)];
  for (const match of key.slice(first).matchAll(/\[([^\]]*)\]/g)) parts.push(match[1] ?? '');
  return parts;
}

type Node = { [key: string]: Node | string };

function assign(target: Node, path: string[], value: string): void {
  let node = target;
  for (let i = 0; i < path.length - 1; i++) {
    let segment = path[i]!;
    if (segment === '') segment = String(Object.keys(node).length);
    const next = node[segment];
    if (typeof next === 'object') node = next;
    else {
      const created: Node = {};
      node[segment] = created;
      node = created;
    }
  }
  let last = path[path.length - 1]!;
  if (last === '') last = String(Object.keys(node).length);
  node[last] = value;
}

// Objects whose keys are exactly 0..n-1 were arrays on the wire.
function normalizeArrays(node: Node | string): FormValue {
  if (typeof node === 'string') return node;
  const keys = Object.keys(node);
  const isArray = keys.length > 0 && keys.every((k, i) => k === String(i));
  if (isArray) return keys.map((k) => normalizeArrays(node[k]!));
  const out: { [key: string]: FormValue } = {};
  for (const k of keys) out[k] = normalizeArrays(node[k]!);
  return out;
}

// Typed readers for decoded form params; each throws Stripe's 400 on a wrong shape.

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

/** A list's `limit`: 1 to 100, 10 when unset. */
export function readListLimit(params: FormParams): number {
  const limit = readInteger(params, 'limit') ?? 10;
  if (limit < 1 || limit > 100) throw invalidParam('limit', 'Limit must be between 1 and 100.');
  return limit;
}
