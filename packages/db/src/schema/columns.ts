import { type SQL, sql } from 'drizzle-orm';
import { type AnyPgColumn, text, timestamp } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.ts';

/** The owning tenant: every table but `tenants` is keyed by it first. */
export const tenantId = () =>
  text('tenant_id')
    .notNull()
    .references(() => tenants.id);

/** When the row was written. */
export const createdAt = () =>
  timestamp('created_at', { withTimezone: true }).notNull().default(sql`now()`);

/** When the row was written and when it last moved. */
export const timestamps = () => ({
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().default(sql`now()`),
});

/** A processor's refusal or error, once it gave one: its code and its words. */
export const failure = () => ({
  failureCode: text('failure_code'),
  failureMessage: text('failure_message'),
});

/** A check that `column` holds one of `values` (the list its `enum` names). */
export const isOneOf = (column: AnyPgColumn, values: readonly string[]): SQL =>
  sql`${column} in (${sql.raw(values.map((value) => `'${value}'`).join(', '))})`;
