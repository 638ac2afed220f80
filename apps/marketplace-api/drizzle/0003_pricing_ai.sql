CREATE TABLE "tariff_grids" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "tariff_grids_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"name" text NOT NULL,
	"vehicle_category" text NOT NULL,
	"region_code" text,
	"hourly_rate_cents" integer NOT NULL,
	"currency" text DEFAULT 'EUR' NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tariff_grids_rate_valid" CHECK ("tariff_grids"."hourly_rate_cents" > 0),
	CONSTRAINT "tariff_grids_category_valid" CHECK ("tariff_grids"."vehicle_category" in ('city', 'compact', 'family', 'suv', 'premium', 'utility'))
);
--> statement-breakpoint
CREATE TABLE "ai_cache" (
	"feature" text NOT NULL,
	"cache_key" text NOT NULL,
	"model" text NOT NULL,
	"value" jsonb NOT NULL,
	"hits" integer DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_hit_at" timestamp with time zone,
	CONSTRAINT "ai_cache_feature_cache_key_pk" PRIMARY KEY("feature","cache_key")
);
--> statement-breakpoint
CREATE TABLE "ai_calls" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "ai_calls_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"feature" text NOT NULL,
	"model" text NOT NULL,
	"cached" boolean NOT NULL,
	"success" boolean NOT NULL,
	"prompt_tokens" integer,
	"completion_tokens" integer,
	"latency_ms" integer NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "tariff_grids_active_unique" ON "tariff_grids" USING btree ("vehicle_category",coalesce("region_code", '')) WHERE "tariff_grids"."active";--> statement-breakpoint
CREATE INDEX "tariff_grids_category_idx" ON "tariff_grids" USING btree ("vehicle_category");--> statement-breakpoint
CREATE INDEX "ai_cache_expires_idx" ON "ai_cache" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "ai_calls_feature_created_idx" ON "ai_calls" USING btree ("feature","created_at");