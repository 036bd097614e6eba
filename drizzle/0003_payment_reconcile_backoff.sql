ALTER TABLE "payments" ADD COLUMN "reconcile_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "reconcile_checks" integer DEFAULT 0 NOT NULL;