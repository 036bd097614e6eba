/**
 * The DDL of `idempotencyKeys`, `idempotencyRateLimits` and `idempotencyKeyAudit`, exactly as drizzle-kit generates it
 * from `schema.ts` (a test regenerates it and fails on any drift). For applications that do not
 * run drizzle-kit: execute it once (it is one multi-statement string; the breakpoints are SQL
 * comments).
 */
export const idempotencySchemaSql = `CREATE TABLE "idempotency_key_audit" (
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "idempotency_key_audit_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tenant_id" text NOT NULL,
	"operation" text NOT NULL,
	"key" text NOT NULL,
	"action" text NOT NULL,
	"actor" text NOT NULL,
	"reason" text NOT NULL,
	"from_state" text NOT NULL,
	"to_state" text NOT NULL,
	"recovery_point" text NOT NULL,
	"attempts" integer NOT NULL,
	"fingerprint" text NOT NULL,
	"response_status" integer,
	"key_created_at" timestamp with time zone NOT NULL,
	"acted_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_key_audit_pkey" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "idempotency_key_audit_action_check" CHECK ("idempotency_key_audit"."action" in ('release', 'evict'))
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"tenant_id" text NOT NULL,
	"operation" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"owner_token" text,
	"locked_until" timestamp with time zone,
	"recovery_point" text DEFAULT 'started' NOT NULL,
	"recovery_data" jsonb,
	"on_expired_lease" text DEFAULT 'resume' NOT NULL,
	"tombstone_ms" integer DEFAULT 0 NOT NULL,
	"acquired_via" text DEFAULT 'insert' NOT NULL,
	"response_status" integer,
	"response_headers" jsonb,
	"response_body" text,
	"response_key_id" text,
	"attempts" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("tenant_id","operation","key"),
	CONSTRAINT "idempotency_keys_state_check" CHECK ("idempotency_keys"."state" in ('in_progress', 'completed', 'released', 'unknown', 'expired')),
	CONSTRAINT "idempotency_keys_policy_check" CHECK ("idempotency_keys"."on_expired_lease" in ('resume', 'unknown')),
	CONSTRAINT "idempotency_keys_tombstone_check" CHECK ("idempotency_keys"."tombstone_ms" >= 0),
	CONSTRAINT "idempotency_keys_lease_check" CHECK ("idempotency_keys"."state" <> 'in_progress' or ("idempotency_keys"."owner_token" is not null and "idempotency_keys"."locked_until" is not null)),
	CONSTRAINT "idempotency_keys_response_check" CHECK ("idempotency_keys"."state" <> 'completed' or "idempotency_keys"."response_status" is not null)
);
--> statement-breakpoint
CREATE TABLE "idempotency_rate_limits" (
	"tenant_id" text NOT NULL,
	"principal" text DEFAULT '' NOT NULL,
	"theoretical_arrival" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_rate_limits_pkey" PRIMARY KEY("tenant_id","principal")
);
--> statement-breakpoint
CREATE INDEX "idempotency_key_audit_key_idx" ON "idempotency_key_audit" USING btree ("tenant_id","operation","key");--> statement-breakpoint
CREATE INDEX "idempotency_keys_reapable_idx" ON "idempotency_keys" USING btree ("expires_at") WHERE "idempotency_keys"."state" in ('completed', 'released', 'expired');--> statement-breakpoint
CREATE INDEX "idempotency_keys_leases_idx" ON "idempotency_keys" USING btree ("locked_until") WHERE "idempotency_keys"."state" = 'in_progress';--> statement-breakpoint
CREATE INDEX "idempotency_rate_limits_arrival_idx" ON "idempotency_rate_limits" USING btree ("theoretical_arrival");
`;
