/** `T` with each `Date` (or `Date | null`) field as the ISO string its JSON answer carries. */
export type IsoTimes<T> = {
  [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K];
};

/**
 * `row` with each `Date` field written as its ISO string, so an answer's type says what the
 * client receives (no tRPC transformer revives dates).
 */
export function isoTimes<T extends object>(row: T): IsoTimes<T> {
  return Object.fromEntries(
    Object.entries(row).map(([name, value]) => [
      name,
      value instanceof Date ? value.toISOString() : value,
    ]),
  ) as IsoTimes<T>;
}
