CREATE TABLE "idempotency_key_audit" (
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
CREATE INDEX "idempotency_key_audit_key_idx" ON "idempotency_key_audit" USING btree ("tenant_id","operation","key");