ALTER TABLE "payment_intents" ADD COLUMN "return_url" text;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "next_action" jsonb;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "action_idempotency_key" text;