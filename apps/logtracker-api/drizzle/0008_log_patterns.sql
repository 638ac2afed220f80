-- The pattern of each mined log moves beside the log (see log_patterns in db/schema/patterns.ts):
-- the tags already set are kept, then the column and its index go.
CREATE TABLE "log_patterns" (
	"project_id" integer NOT NULL,
	"timestamp" timestamp with time zone NOT NULL,
	"log_id" bigint NOT NULL,
	"level" text NOT NULL,
	"pattern_id" integer NOT NULL,
	CONSTRAINT "log_patterns_pkey" PRIMARY KEY("project_id","log_id")
);
--> statement-breakpoint
INSERT INTO "log_patterns" ("project_id", "timestamp", "log_id", "level", "pattern_id")
SELECT "project_id", "timestamp", "id", "level", "pattern_id" FROM "logs" WHERE "pattern_id" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "log_patterns_pattern_time_idx" ON "log_patterns" USING btree ("project_id","pattern_id","timestamp" DESC NULLS LAST,"log_id" DESC NULLS LAST);--> statement-breakpoint
DROP INDEX "logs_project_pattern_time_idx";--> statement-breakpoint
ALTER TABLE "logs" DROP COLUMN "pattern_id";
