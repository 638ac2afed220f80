CREATE TABLE "absences" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "absences_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"prestataire_id" integer NOT NULL,
	"starts_at" timestamp with time zone NOT NULL,
	"ends_at" timestamp with time zone NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "absences_range_valid" CHECK ("absences"."ends_at" > "absences"."starts_at")
);
--> statement-breakpoint
CREATE TABLE "closures" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "closures_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"prestataire_id" integer NOT NULL,
	"start_date" date NOT NULL,
	"end_date" date NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "closures_range_valid" CHECK ("closures"."end_date" >= "closures"."start_date")
);
--> statement-breakpoint
CREATE TABLE "appointments" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "appointments_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"service_request_id" integer NOT NULL,
	"offer_id" integer,
	"client_id" integer NOT NULL,
	"prestataire_id" integer NOT NULL,
	"vehicle_id" integer NOT NULL,
	"service_id" integer NOT NULL,
	"starts_at" timestamp with time zone NOT NULL,
	"ends_at" timestamp with time zone NOT NULL,
	"price_cents" integer NOT NULL,
	"currency" text DEFAULT 'EUR' NOT NULL,
	"status" text DEFAULT 'scheduled' NOT NULL,
	"started_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"paid_at" timestamp with time zone,
	"cancelled_at" timestamp with time zone,
	"cancelled_by" integer,
	"cancel_reason" text,
	"cancellation_fee_cents" integer,
	"price_adjustment_amount_cents" integer,
	"price_adjustment_reason" text,
	"price_adjustment_status" text,
	"price_adjustment_requested_at" timestamp with time zone,
	"notes" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "appointments_status_valid" CHECK ("appointments"."status" in ('scheduled', 'in_progress', 'ended', 'completed', 'cancelled')),
	CONSTRAINT "appointments_range_valid" CHECK ("appointments"."ends_at" > "appointments"."starts_at"),
	CONSTRAINT "appointments_price_nonnegative" CHECK ("appointments"."price_cents" >= 0),
	CONSTRAINT "appointments_adjustment_valid" CHECK ("appointments"."price_adjustment_status" is null or ("appointments"."price_adjustment_status" in ('pending', 'accepted', 'rejected') and "appointments"."price_adjustment_amount_cents" >= 0))
);
--> statement-breakpoint
CREATE TABLE "offers" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "offers_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"service_request_id" integer NOT NULL,
	"prestataire_id" integer NOT NULL,
	"amount_cents" integer NOT NULL,
	"proposed_start_at" timestamp with time zone NOT NULL,
	"duration_minutes" integer NOT NULL,
	"message" text,
	"valid_until" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"decided_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "offers_status_valid" CHECK ("offers"."status" in ('pending', 'accepted', 'refused', 'withdrawn', 'expired')),
	CONSTRAINT "offers_amount_positive" CHECK ("offers"."amount_cents" > 0),
	CONSTRAINT "offers_duration_valid" CHECK ("offers"."duration_minutes" between 15 and 1440)
);
--> statement-breakpoint
CREATE TABLE "service_request_photos" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "service_request_photos_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"service_request_id" integer NOT NULL,
	"storage_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_requests" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "service_requests_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"client_id" integer NOT NULL,
	"vehicle_id" integer NOT NULL,
	"service_id" integer NOT NULL,
	"prestataire_id" integer,
	"description" text NOT NULL,
	"latitude" double precision NOT NULL,
	"longitude" double precision NOT NULL,
	"city_id" integer,
	"preferred_dates" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"accepted_at" timestamp with time zone,
	"cancelled_at" timestamp with time zone,
	"cancelled_by" integer,
	"cancel_reason" text,
	"refusal_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "service_requests_status_valid" CHECK ("service_requests"."status" in ('open', 'quoted', 'accepted', 'completed', 'cancelled', 'expired', 'refused')),
	CONSTRAINT "service_requests_latitude_valid" CHECK ("service_requests"."latitude" between -90 and 90),
	CONSTRAINT "service_requests_longitude_valid" CHECK ("service_requests"."longitude" between -180 and 180)
);
--> statement-breakpoint
CREATE TABLE "domain_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "domain_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tx_id" bigint DEFAULT (pg_current_xact_id()::text::bigint) NOT NULL,
	"type" text NOT NULL,
	"subject_type" text NOT NULL,
	"subject_id" integer NOT NULL,
	"actor_id" integer,
	"payload" jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outbox_cursors" (
	"consumer" text PRIMARY KEY NOT NULL,
	"last_tx_id" bigint DEFAULT 0 NOT NULL,
	"last_event_id" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "platform_settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" jsonb NOT NULL,
	"updated_by" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "absences" ADD CONSTRAINT "absences_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "closures" ADD CONSTRAINT "closures_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_service_request_id_service_requests_id_fk" FOREIGN KEY ("service_request_id") REFERENCES "public"."service_requests"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_offer_id_offers_id_fk" FOREIGN KEY ("offer_id") REFERENCES "public"."offers"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_client_id_users_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_vehicle_id_vehicles_id_fk" FOREIGN KEY ("vehicle_id") REFERENCES "public"."vehicles"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_cancelled_by_users_id_fk" FOREIGN KEY ("cancelled_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "offers" ADD CONSTRAINT "offers_service_request_id_service_requests_id_fk" FOREIGN KEY ("service_request_id") REFERENCES "public"."service_requests"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "offers" ADD CONSTRAINT "offers_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_request_photos" ADD CONSTRAINT "service_request_photos_service_request_id_service_requests_id_fk" FOREIGN KEY ("service_request_id") REFERENCES "public"."service_requests"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_client_id_users_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_vehicle_id_vehicles_id_fk" FOREIGN KEY ("vehicle_id") REFERENCES "public"."vehicles"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_prestataire_id_users_id_fk" FOREIGN KEY ("prestataire_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_city_id_cities_id_fk" FOREIGN KEY ("city_id") REFERENCES "public"."cities"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_requests" ADD CONSTRAINT "service_requests_cancelled_by_users_id_fk" FOREIGN KEY ("cancelled_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "absences_prestataire_idx" ON "absences" USING btree ("prestataire_id","ends_at");--> statement-breakpoint
CREATE INDEX "closures_prestataire_idx" ON "closures" USING btree ("prestataire_id","end_date");--> statement-breakpoint
CREATE UNIQUE INDEX "appointments_request_unique" ON "appointments" USING btree ("service_request_id");--> statement-breakpoint
CREATE INDEX "appointments_client_idx" ON "appointments" USING btree ("client_id","starts_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "appointments_prestataire_idx" ON "appointments" USING btree ("prestataire_id","starts_at");--> statement-breakpoint
CREATE INDEX "appointments_status_idx" ON "appointments" USING btree ("status","starts_at");--> statement-breakpoint
CREATE INDEX "appointments_autocomplete_idx" ON "appointments" USING btree ("paid_at") WHERE "appointments"."status" = 'ended' and "appointments"."paid_at" is not null;--> statement-breakpoint
CREATE INDEX "offers_request_idx" ON "offers" USING btree ("service_request_id","created_at");--> statement-breakpoint
CREATE INDEX "offers_prestataire_idx" ON "offers" USING btree ("prestataire_id","status","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "offers_one_pending_unique" ON "offers" USING btree ("service_request_id","prestataire_id") WHERE "offers"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "offers_expiry_idx" ON "offers" USING btree ("valid_until") WHERE "offers"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "service_request_photos_request_idx" ON "service_request_photos" USING btree ("service_request_id");--> statement-breakpoint
CREATE INDEX "service_requests_client_idx" ON "service_requests" USING btree ("client_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "service_requests_prestataire_idx" ON "service_requests" USING btree ("prestataire_id","status");--> statement-breakpoint
CREATE INDEX "service_requests_service_status_idx" ON "service_requests" USING btree ("service_id","status");--> statement-breakpoint
CREATE INDEX "service_requests_expiry_idx" ON "service_requests" USING btree ("expires_at") WHERE "service_requests"."status" in ('open', 'quoted');--> statement-breakpoint
CREATE INDEX "service_requests_location_idx" ON "service_requests" USING gist (ll_to_earth("latitude", "longitude")) WHERE "service_requests"."status" in ('open', 'quoted');--> statement-breakpoint
CREATE INDEX "domain_events_order_idx" ON "domain_events" USING btree ("tx_id","id");--> statement-breakpoint
CREATE INDEX "domain_events_subject_idx" ON "domain_events" USING btree ("subject_type","subject_id");--> statement-breakpoint
-- No two active appointments of one prestataire overlap (btree_gist, migration 0000): a booking
-- race is settled by the database, not only by a check in code.
ALTER TABLE "appointments" ADD CONSTRAINT "appointments_no_overlap" EXCLUDE USING gist ("prestataire_id" WITH =, tstzrange("starts_at", "ends_at") WITH &&) WHERE ("status" in ('scheduled', 'in_progress'));
