CREATE TABLE "refunds" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"payment_id" text NOT NULL,
	"amount" integer NOT NULL,
	"reason" text,
	"status" text DEFAULT 'requested' NOT NULL,
	"processor_refund_id" text,
	"downstream_key" text NOT NULL,
	"requested_by" text NOT NULL,
	"failure_code" text,
	"failure_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "refunds_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "refunds_amount_positive" CHECK ("refunds"."amount" > 0),
	CONSTRAINT "refunds_status_valid" CHECK ("refunds"."status" in ('requested', 'pending', 'succeeded', 'failed', 'unknown')),
	CONSTRAINT "refunds_reason_valid" CHECK ("refunds"."reason" is null or "refunds"."reason" in ('duplicate', 'fraudulent', 'requested_by_customer'))
);
--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_downstream_key_unique" ON "refunds" USING btree ("tenant_id","downstream_key");--> statement-breakpoint
CREATE INDEX "refunds_payment_idx" ON "refunds" USING btree ("tenant_id","payment_id");