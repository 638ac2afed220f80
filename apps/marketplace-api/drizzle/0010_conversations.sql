CREATE TABLE "conversation_messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "conversation_messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"conversation_id" integer NOT NULL,
	"sender_id" integer NOT NULL,
	"body" text NOT NULL,
	"read_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "conversations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"client_id" integer NOT NULL,
	"prestataire_id" integer NOT NULL,
	"service_request_id" integer,
	"appointment_id" integer,
	"dispute_status" text DEFAULT 'none' NOT NULL,
	"dispute_reason" text,
	"dispute_reported_by" integer,
	"dispute_reported_at" timestamp with time zone,
	"dispute_resolution_note" text,
	"dispute_refund_cents" integer,
	"dispute_resolved_by" integer,
	"dispute_resolved_at" timestamp with time zone,
	"last_message_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "conversations_dispute_status_valid" CHECK ("conversations"."dispute_status" in ('none', 'open', 'resolved')),
	CONSTRAINT "conversations_refund_nonnegative" CHECK ("conversations"."dispute_refund_cents" is null or "conversations"."dispute_refund_cents" >= 0)
);
--> statement-breakpoint
ALTER TABLE "notifications" ADD COLUMN "event_id" bigint;--> statement-breakpoint
ALTER TABLE "conversation_messages" ADD CONSTRAINT "conversation_messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversation_messages" ADD CONSTRAINT "conversation_messages_sender_id_users_id_fk" FOREIGN KEY ("sender_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_client_id_users_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_service_request_id_service_requests_id_fk" FOREIGN KEY ("service_request_id") REFERENCES "public"."service_requests"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_appointment_id_appointments_id_fk" FOREIGN KEY ("appointment_id") REFERENCES "public"."appointments"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_dispute_reported_by_users_id_fk" FOREIGN KEY ("dispute_reported_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_dispute_resolved_by_users_id_fk" FOREIGN KEY ("dispute_resolved_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conversation_messages_conversation_idx" ON "conversation_messages" USING btree ("conversation_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversation_messages_unread_idx" ON "conversation_messages" USING btree ("conversation_id","sender_id") WHERE "conversation_messages"."read_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_pair_subject_unique" ON "conversations" USING btree ("client_id","prestataire_id",coalesce("service_request_id", 0),coalesce("appointment_id", 0));--> statement-breakpoint
CREATE INDEX "conversations_client_idx" ON "conversations" USING btree ("client_id","updated_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversations_prestataire_idx" ON "conversations" USING btree ("prestataire_id","updated_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversations_disputes_idx" ON "conversations" USING btree ("dispute_status","dispute_reported_at") WHERE "conversations"."dispute_status" <> 'none';--> statement-breakpoint
CREATE UNIQUE INDEX "notifications_event_user_unique" ON "notifications" USING btree ("event_id","user_id") WHERE "notifications"."event_id" is not null;