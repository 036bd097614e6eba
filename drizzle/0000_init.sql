CREATE TABLE "products" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"unit_amount" integer NOT NULL,
	"currency" text NOT NULL,
	CONSTRAINT "products_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "products_unit_amount_positive" CHECK ("products"."unit_amount" > 0),
	CONSTRAINT "products_currency_lowercase" CHECK ("products"."currency" ~ '^[a-z]{3}$')
);
--> statement-breakpoint
CREATE TABLE "outbox_jobs" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"kind" text NOT NULL,
	"payment_id" text NOT NULL,
	"downstream_key" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer DEFAULT 8 NOT NULL,
	"run_after" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_by" text,
	"lock_token" text,
	"locked_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "outbox_jobs_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "outbox_jobs_status_valid" CHECK ("outbox_jobs"."status" in ('pending', 'running', 'done', 'dead')),
	CONSTRAINT "outbox_jobs_attempts_nonnegative" CHECK ("outbox_jobs"."attempts" >= 0)
);
--> statement-breakpoint
CREATE TABLE "payments" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"status" text NOT NULL,
	"amount" integer NOT NULL,
	"currency" text NOT NULL,
	"lines" jsonb NOT NULL,
	"idempotency_key" text NOT NULL,
	"downstream_key" text NOT NULL,
	"processor_payment_intent_id" text,
	"failure_code" text,
	"failure_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payments_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "payments_amount_positive" CHECK ("payments"."amount" > 0),
	CONSTRAINT "payments_status_valid" CHECK ("payments"."status" in ('processing', 'succeeded', 'declined', 'unknown', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"api_key_sha256" text NOT NULL,
	"processor_secret_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tenants_api_key_sha256_unique" UNIQUE("api_key_sha256")
);
--> statement-breakpoint
ALTER TABLE "products" ADD CONSTRAINT "products_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outbox_jobs" ADD CONSTRAINT "outbox_jobs_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "outbox_jobs_claimable_idx" ON "outbox_jobs" USING btree ("run_after") WHERE "outbox_jobs"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "outbox_jobs_running_lease_idx" ON "outbox_jobs" USING btree ("locked_until") WHERE "outbox_jobs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "outbox_jobs_payment_idx" ON "outbox_jobs" USING btree ("tenant_id","payment_id");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_downstream_key_unique" ON "payments" USING btree ("tenant_id","downstream_key");--> statement-breakpoint
CREATE INDEX "payments_status_updated_idx" ON "payments" USING btree ("status","updated_at") WHERE "payments"."status" in ('processing', 'unknown');