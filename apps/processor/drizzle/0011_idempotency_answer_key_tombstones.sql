ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_state_check";--> statement-breakpoint
DROP INDEX "idempotency_keys_reapable_idx";--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "tombstone_ms" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "response_key_id" text;--> statement-breakpoint
CREATE INDEX "idempotency_keys_reapable_idx" ON "idempotency_keys" USING btree ("expires_at") WHERE "idempotency_keys"."state" in ('completed', 'released', 'expired');--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_tombstone_check" CHECK ("idempotency_keys"."tombstone_ms" >= 0);--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_state_check" CHECK ("idempotency_keys"."state" in ('in_progress', 'completed', 'released', 'unknown', 'expired'));