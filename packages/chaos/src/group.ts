/** Items by a key, in their order. */
export function groupBy<T, K = string>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const map = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = map.get(key);
    if (list) list.push(item);
    else map.set(key, [item]);
  }
  return map;
}

/** A Map key for a tuple: ids and keys are scoped by tenant, so lookups pair them. */
export const tupleKey = (...parts: (string | null | undefined)[]) =>
  parts.map(String).join('\u0000');
