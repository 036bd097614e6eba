import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { INITIAL_RECOVERY_POINT } from '../../core/types.ts';

/**
 * One row per (tenant, operation, key). Tenant first in the primary key so a tenant-sharded
 * Postgres (Citus and the like) keeps every statement of a key on one shard.
 *
 * Add it to your drizzle schema (and so to your migrations):
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    tenantId: text('tenant_id').notNull(),
    operation: text('operation').notNull(),
    key: text('key').notNull(),
    /** Hex SHA-256 of the JCS canonical JSON of { operation, input }. */
    fingerprint: text('fingerprint').notNull(),
    state: text('state').notNull(),
    /** Random token of the attempt holding (or having completed) the key. */
    ownerToken: text('owner_token'),
    lockedUntil: timestamp('locked_until', { withTimezone: true }),
    /** Recovery point: the last committed phase (leased mode); INITIAL_RECOVERY_POINT when none has. */
    recoveryPoint: text('recovery_point').notNull().default(INITIAL_RECOVERY_POINT),
    recoveryData: jsonb('recovery_data'),
    /** Policy captured at reservation, so the sweeper needs no per-operation configuration. */
    onExpiredLease: text('on_expired_lease').notNull().default('resume'),
    /**
     * Policy captured at reservation (`tombstoneMs`): how long past `expires_at` a completed key
     * is kept as a tombstone (`expired`: fingerprint and status, no answer) that refuses retries.
     */
    tombstoneMs: integer('tombstone_ms').notNull().default(0),
    /** How the current holder got the key: insert, released, expired_lease, expired_response. */
    acquiredVia: text('acquired_via').notNull().default('insert'),
    responseStatus: integer('response_status'),
    responseHeaders: jsonb('response_headers'),
    responseBody: text('response_body'),
    /** Id of the key `response_body` is encrypted with (`createDrizzleStore`'s `encryption`); null: in clear. */
    responseKeyId: text('response_key_id'),
    attempts: integer('attempts').notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'idempotency_keys_pkey', columns: [t.tenantId, t.operation, t.key] }),
    // The reaper scans only terminal rows by expiry; the partial index keeps that scan tiny.
    index('idempotency_keys_reapable_idx')
      .on(t.expiresAt)
      .where(sql`${t.state} in ('completed', 'released', 'expired')`),
    // The sweeper scans only live leases by expiry.
    index('idempotency_keys_leases_idx').on(t.lockedUntil).where(sql`${t.state} = 'in_progress'`),
    check(
      'idempotency_keys_state_check',
      sql`${t.state} in ('in_progress', 'completed', 'released', 'unknown', 'expired')`,
    ),
    check('idempotency_keys_policy_check', sql`${t.onExpiredLease} in ('resume', 'unknown')`),
    check('idempotency_keys_tombstone_check', sql`${t.tombstoneMs} >= 0`),
    check(
      'idempotency_keys_lease_check',
      sql`${t.state} <> 'in_progress' or (${t.ownerToken} is not null and ${t.lockedUntil} is not null)`,
    ),
    check(
      'idempotency_keys_response_check',
      sql`${t.state} <> 'completed' or ${t.responseStatus} is not null`,
    ),
  ],
);

/**
 * The new-key allowance per tenant and principal (a session, an API key; '' is the tenant as a
 * whole), only used when `rateLimit` is configured: one row each, holding its theoretical
 * arrival time (a generic cell rate algorithm). A row whose time is past limits nothing.
 */
export const idempotencyRateLimits = pgTable(
  'idempotency_rate_limits',
  {
    tenantId: text('tenant_id').notNull(),
    principal: text('principal').notNull().default(''),
    theoreticalArrival: timestamp('theoretical_arrival', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'idempotency_rate_limits_pkey', columns: [t.tenantId, t.principal] }),
    index('idempotency_rate_limits_arrival_idx').on(t.theoreticalArrival),
  ],
);

/**
 * The durable audit trail of operator actions on keys (`@once/idempotency/drizzle/operator`):
 * who released or evicted which key, why, what it was then, and when. Written in the same
 * transaction as the action, so an action without its audit row never commits. Never reaped by
 * this package: keep or prune it by your own retention rules.
 */
export const idempotencyKeyAudit = pgTable(
  'idempotency_key_audit',
  {
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity(),
    tenantId: text('tenant_id').notNull(),
    operation: text('operation').notNull(),
    key: text('key').notNull(),
    /** `release` or `evict`. */
    action: text('action').notNull(),
    /** Who acted (an operator's id or name, as your authentication knows them). */
    actor: text('actor').notNull(),
    reason: text('reason').notNull(),
    /** The key as the operator acted on it. */
    fromState: text('from_state').notNull(),
    /** `released`, or `deleted` for an eviction. */
    toState: text('to_state').notNull(),
    recoveryPoint: text('recovery_point').notNull(),
    attempts: integer('attempts').notNull(),
    fingerprint: text('fingerprint').notNull(),
    responseStatus: integer('response_status'),
    keyCreatedAt: timestamp('key_created_at', { withTimezone: true }).notNull(),
    actedAt: timestamp('acted_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'idempotency_key_audit_pkey', columns: [t.tenantId, t.id] }),
    index('idempotency_key_audit_key_idx').on(t.tenantId, t.operation, t.key),
    check('idempotency_key_audit_action_check', sql`${t.action} in ('release', 'evict')`),
  ],
);
