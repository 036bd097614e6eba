CREATE TABLE "payment_actions" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"payment_id" text NOT NULL,
	"kind" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"amount" integer,
	"downstream_key" text NOT NULL,
	"requested_by" text NOT NULL,
	"failure_code" text,
	"failure_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payment_actions_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "payment_actions_kind_valid" CHECK ("payment_actions"."kind" in ('capture', 'void')),
	CONSTRAINT "payment_actions_status_valid" CHECK ("payment_actions"."status" in ('pending', 'succeeded', 'failed', 'unknown')),
	CONSTRAINT "payment_actions_amount_positive" CHECK ("payment_actions"."amount" is null or "payment_actions"."amount" > 0)
);
--> statement-breakpoint
ALTER TABLE "payments" DROP CONSTRAINT "payments_status_valid";--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "capture_method" text DEFAULT 'automatic' NOT NULL;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "amount_captured" integer;--> statement-breakpoint
ALTER TABLE "payment_actions" ADD CONSTRAINT "payment_actions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "payment_actions_downstream_key_unique" ON "payment_actions" USING btree ("tenant_id","downstream_key");--> statement-breakpoint
CREATE UNIQUE INDEX "payment_actions_one_live_per_payment" ON "payment_actions" USING btree ("tenant_id","payment_id") WHERE "payment_actions"."status" <> 'failed';--> statement-breakpoint
CREATE INDEX "payment_actions_payment_idx" ON "payment_actions" USING btree ("tenant_id","payment_id");--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_capture_method_valid" CHECK ("payments"."capture_method" in ('automatic', 'manual'));--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_status_valid" CHECK ("payments"."status" in ('processing', 'succeeded', 'declined', 'unknown', 'failed', 'authorized', 'captured', 'voided'));