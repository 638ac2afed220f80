CREATE TABLE "vehicles" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "vehicles_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"owner_id" integer NOT NULL,
	"make" text NOT NULL,
	"model" text NOT NULL,
	"year" smallint NOT NULL,
	"vin" text,
	"plate" text,
	"fuel" text,
	"engine" text,
	"mileage_km" integer,
	"nickname" text,
	"repairdata_vehicle_id" text,
	"identified_at" timestamp with time zone,
	"deleted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "vehicles_year_valid" CHECK ("vehicles"."year" between 1900 and 2100),
	CONSTRAINT "vehicles_mileage_valid" CHECK ("vehicles"."mileage_km" is null or "vehicles"."mileage_km" >= 0)
);
--> statement-breakpoint
ALTER TABLE "vehicles" ADD CONSTRAINT "vehicles_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "vehicles_owner_idx" ON "vehicles" USING btree ("owner_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "vehicles_owner_vin_unique" ON "vehicles" USING btree ("owner_id","vin") WHERE "vehicles"."deleted_at" is null and "vehicles"."vin" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "vehicles_owner_plate_unique" ON "vehicles" USING btree ("owner_id","plate") WHERE "vehicles"."deleted_at" is null and "vehicles"."plate" is not null;