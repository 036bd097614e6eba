CREATE TABLE "money_action_keys" (
	"tenant_id" text NOT NULL,
	"key" text NOT NULL,
	"kind" text NOT NULL,
	"payment_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "money_action_keys_tenant_id_key_pk" PRIMARY KEY("tenant_id","key"),
	CONSTRAINT "money_action_keys_kind_valid" CHECK ("money_action_keys"."kind" in ('capture', 'void', 'refund'))
);
--> statement-breakpoint
ALTER TABLE "money_action_keys" ADD CONSTRAINT "money_action_keys_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;