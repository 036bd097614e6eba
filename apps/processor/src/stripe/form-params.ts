/** A decoded Stripe request body or query: nested objects and arrays of strings. */
export type FormValue = string | FormValue[] | { [key: string]: FormValue };
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
