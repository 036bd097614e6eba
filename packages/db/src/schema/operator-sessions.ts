import { sql } from 'drizzle-orm';
import { check, index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.ts';
import { tenants } from './tenants.ts';

/** What proved an operator session: the deployment's operator code, or the merchant's API key. */
export const operatorSessionCredentials = ['operator_code', 'api_key'] as const;
export type OperatorSessionCredential = (typeof operatorSessionCredentials)[number];

/**
 * One operator's browser session, so the server can end it: the signed cookie names its row,
 * and a cookie whose row is ended, expired or missing is refused. Sign-out sets `ended_at`;
 * rotating the merchant's API key ends every session that key opened (`api_key_sha256`).
 * Shopper sessions have no row: they read only the payments they placed.
 */
export const operatorSessions = pgTable(
  'operator_sessions',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** The random session id the cookie carries. */
    id: text('id').notNull(),
    credential: text('credential', { enum: operatorSessionCredentials }).notNull(),
    /** SHA-256 (hex) of the API key that opened it; null when the operator code did. */
    apiKeySha256: text('api_key_sha256'),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    // An API-key session names its key (so a rotation finds it); a code session names none.
    check(
      'operator_sessions_credential_check',
      sql`(${t.credential} = 'api_key' and ${t.apiKeySha256} is not null) or (${t.credential} = 'operator_code' and ${t.apiKeySha256} is null)`,
    ),
    // Rotation ends a key's open sessions; expired rows are dropped per tenant.
    index('operator_sessions_api_key_idx')
      .on(t.tenantId, t.apiKeySha256)
      .where(sql`${t.endedAt} is null`),
    index('operator_sessions_expires_idx').on(t.tenantId, t.expiresAt),
  ],
);
