CREATE TABLE "rate_limits" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"tat_ms" bigint NOT NULL,
	CONSTRAINT "rate_limits_scope_key_pk" PRIMARY KEY("scope","key")
);
