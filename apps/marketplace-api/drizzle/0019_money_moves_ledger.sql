CREATE TABLE "marketplace"."ledger_entries" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "marketplace"."ledger_entries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"transaction_id" text NOT NULL,
	"account" text NOT NULL,
	"amount_cents" integer NOT NULL,
	"currency" text DEFAULT 'EUR' NOT NULL,
	"payment_id" integer,
	"prestataire_id" integer,
	"move_id" integer,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "marketplace"."money_moves" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "marketplace"."money_moves_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"payment_id" integer,
	"prestataire_id" integer,
	"amount_cents" integer NOT NULL,
	"currency" text DEFAULT 'EUR' NOT NULL,
	"target" text,
	"reason" text,
	"origin" text,
	"attempt" integer DEFAULT 1 NOT NULL,
	"tries" integer DEFAULT 0 NOT NULL,
	"idempotency_key" text,
	"processor_id" text,
	"failure_code" text,
	"failure_reason" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_until" timestamp with time zone,
	"requested_by" integer,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "money_moves_kind_valid" CHECK ("marketplace"."money_moves"."kind" in ('refund', 'transfer', 'reversal', 'payout')),
	CONSTRAINT "money_moves_status_valid" CHECK ("marketplace"."money_moves"."status" in ('pending', 'executing', 'retrying', 'succeeded', 'failed')),
	CONSTRAINT "money_moves_amount_positive" CHECK ("marketplace"."money_moves"."amount_cents" > 0)
);
--> statement-breakpoint
CREATE TABLE "marketplace"."reconciliation_items" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "marketplace"."reconciliation_items_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"key" text NOT NULL,
	"kind" text NOT NULL,
	"payment_id" integer,
	"prestataire_id" integer,
	"expected_cents" integer,
	"actual_cents" integer,
	"detail" text NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "marketplace"."payment_transfers" DROP CONSTRAINT "payment_transfers_status_valid";--> statement-breakpoint
ALTER TABLE "marketplace"."payouts" ALTER COLUMN "payout_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "marketplace"."connected_accounts" ADD COLUMN "transfers_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "marketplace"."payouts" ADD COLUMN "move_id" integer;--> statement-breakpoint
ALTER TABLE "marketplace"."ledger_entries" ADD CONSTRAINT "ledger_entries_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "marketplace"."payments"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "marketplace"."money_moves" ADD CONSTRAINT "money_moves_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "marketplace"."payments"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "marketplace"."money_moves" ADD CONSTRAINT "money_moves_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "marketplace"."users"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_entries_transaction_account_unique" ON "marketplace"."ledger_entries" USING btree ("transaction_id","account");--> statement-breakpoint
CREATE INDEX "ledger_entries_payment_idx" ON "marketplace"."ledger_entries" USING btree ("payment_id");--> statement-breakpoint
CREATE INDEX "ledger_entries_prestataire_idx" ON "marketplace"."ledger_entries" USING btree ("prestataire_id","account");--> statement-breakpoint
CREATE INDEX "ledger_entries_account_idx" ON "marketplace"."ledger_entries" USING btree ("account");--> statement-breakpoint
CREATE UNIQUE INDEX "money_moves_origin_unique" ON "marketplace"."money_moves" USING btree ("origin");--> statement-breakpoint
CREATE UNIQUE INDEX "money_moves_idempotency_key_unique" ON "marketplace"."money_moves" USING btree ("idempotency_key");--> statement-breakpoint
CREATE INDEX "money_moves_payment_idx" ON "marketplace"."money_moves" USING btree ("payment_id","kind");--> statement-breakpoint
CREATE INDEX "money_moves_prestataire_idx" ON "marketplace"."money_moves" USING btree ("prestataire_id","kind");--> statement-breakpoint
CREATE INDEX "money_moves_due_idx" ON "marketplace"."money_moves" USING btree ("next_attempt_at") WHERE "marketplace"."money_moves"."status" in ('pending', 'executing', 'retrying');--> statement-breakpoint
CREATE UNIQUE INDEX "reconciliation_items_open_key_unique" ON "marketplace"."reconciliation_items" USING btree ("key") WHERE "marketplace"."reconciliation_items"."resolved_at" is null;--> statement-breakpoint
CREATE INDEX "reconciliation_items_open_idx" ON "marketplace"."reconciliation_items" USING btree ("last_seen_at") WHERE "marketplace"."reconciliation_items"."resolved_at" is null;--> statement-breakpoint
ALTER TABLE "marketplace"."payment_transfers" ADD CONSTRAINT "payment_transfers_status_valid" CHECK ("marketplace"."payment_transfers"."status" in ('held', 'sending', 'paid', 'partially_reversed', 'reversed'));--> statement-breakpoint
-- Accounts known before this migration took transfers once charges were enabled: keep doing so.
UPDATE "marketplace"."connected_accounts" SET "transfers_enabled" = "charges_enabled";
