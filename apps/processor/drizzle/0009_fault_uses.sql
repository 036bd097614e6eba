CREATE TABLE "fault_uses" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "fault_uses_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"fault_id" text NOT NULL,
	"account_id" text NOT NULL,
	"kind" text NOT NULL,
	"used_at" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"operation" text NOT NULL,
	"idempotency_key" text,
	"object_id" text
);
--> statement-breakpoint
ALTER TABLE "fault_uses" ADD CONSTRAINT "fault_uses_fault_id_faults_id_fk" FOREIGN KEY ("fault_id") REFERENCES "public"."faults"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "fault_uses_fault_idx" ON "fault_uses" USING btree ("fault_id","used_at");--> statement-breakpoint
CREATE INDEX "fault_uses_account_idx" ON "fault_uses" USING btree ("account_id","used_at");