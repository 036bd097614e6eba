ALTER TABLE "charges" ADD COLUMN "amount_captured" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "charges" ADD COLUMN "captured" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "amount_capturable" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "capture_method" text DEFAULT 'automatic' NOT NULL;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "capture_before" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "cancellation_reason" text;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "canceled_at" timestamp (6) with time zone;--> statement-breakpoint
CREATE INDEX "payment_intents_capture_before_idx" ON "payment_intents" USING btree ("capture_before") WHERE "payment_intents"."status" = 'requires_capture';--> statement-breakpoint
-- Charges made before manual capture were captured in full when they succeeded.
UPDATE "charges" SET "amount_captured" = "amount" WHERE "status" = 'succeeded';