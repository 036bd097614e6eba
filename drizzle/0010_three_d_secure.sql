ALTER TABLE "payments" DROP CONSTRAINT "payments_status_valid";--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "next_action_url" text;--> statement-breakpoint
CREATE INDEX "payments_requires_action_idx" ON "payments" USING btree ("updated_at") WHERE "payments"."status" = 'requires_action';--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_status_valid" CHECK ("payments"."status" in ('processing', 'succeeded', 'declined', 'unknown', 'failed', 'authorized', 'captured', 'voided', 'requires_action', 'canceled'));