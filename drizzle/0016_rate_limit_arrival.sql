-- Fixed-window counts become one theoretical arrival time per tenant and principal; the counts are not carried over (each principal starts with its whole allowance once).
DELETE FROM "idempotency_rate_limits";--> statement-breakpoint
DROP INDEX "idempotency_rate_limits_window_end_idx";--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" DROP CONSTRAINT "idempotency_rate_limits_pkey";--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" DROP COLUMN "window_start";--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" DROP COLUMN "window_end";--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" DROP COLUMN "new_keys";--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" ADD COLUMN "theoretical_arrival" timestamp with time zone NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_rate_limits" ADD CONSTRAINT "idempotency_rate_limits_pkey" PRIMARY KEY("tenant_id","principal");--> statement-breakpoint
CREATE INDEX "idempotency_rate_limits_arrival_idx" ON "idempotency_rate_limits" USING btree ("theoretical_arrival");
