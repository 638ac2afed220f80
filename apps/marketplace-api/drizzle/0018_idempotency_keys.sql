CREATE TABLE "marketplace"."idempotency_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"fingerprint" text NOT NULL,
	"owner" text NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"status" integer,
	"content_type" text,
	"location" text,
	"body" text
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_at" ON "marketplace"."idempotency_keys" USING btree ("expires_at");