CREATE TABLE "operator_sessions" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"credential" text NOT NULL,
	"api_key_sha256" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	CONSTRAINT "operator_sessions_tenant_id_id_pk" PRIMARY KEY("tenant_id","id"),
	CONSTRAINT "operator_sessions_credential_check" CHECK (("operator_sessions"."credential" = 'api_key' and "operator_sessions"."api_key_sha256" is not null) or ("operator_sessions"."credential" = 'operator_code' and "operator_sessions"."api_key_sha256" is null))
);
--> statement-breakpoint
ALTER TABLE "operator_sessions" ADD CONSTRAINT "operator_sessions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operator_sessions_api_key_idx" ON "operator_sessions" USING btree ("tenant_id","api_key_sha256") WHERE "operator_sessions"."ended_at" is null;--> statement-breakpoint
CREATE INDEX "operator_sessions_expires_idx" ON "operator_sessions" USING btree ("tenant_id","expires_at");