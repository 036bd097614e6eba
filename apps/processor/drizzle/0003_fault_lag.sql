ALTER TABLE "faults" ADD COLUMN "lag_ms" integer;--> statement-breakpoint
ALTER TABLE "faults" ADD COLUMN "expires_at" timestamp with time zone;