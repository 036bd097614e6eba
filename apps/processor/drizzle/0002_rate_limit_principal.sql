ALTER TABLE "idempotency_rate_limits" ADD COLUMN "principal" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" DROP CONSTRAINT "idempotency_rate_limits_pkey";
--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" ADD CONSTRAINT "idempotency_rate_limits_pkey" PRIMARY KEY("tenant_id","principal","window_start");