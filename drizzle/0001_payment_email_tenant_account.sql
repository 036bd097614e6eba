ALTER TABLE "payments" ADD COLUMN "customer_email" text;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "processor_account_id" text;--> statement-breakpoint
ALTER TABLE "tenants" ADD CONSTRAINT "tenants_processor_account_id_unique" UNIQUE("processor_account_id");