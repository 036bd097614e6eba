ALTER TABLE "refunds" ADD COLUMN "failure_reason" text;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "settles_at" timestamp (6) with time zone;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "settles_to" text;--> statement-breakpoint
CREATE INDEX "refunds_account_created_idx" ON "refunds" USING btree ("account_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "refunds_settles_at_idx" ON "refunds" USING btree ("settles_at") WHERE "refunds"."settles_at" is not null;