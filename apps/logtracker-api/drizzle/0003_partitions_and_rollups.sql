-- Logs become partitioned by day on "timestamp", so that expired days can be dropped whole and
-- a day's rows sit together; the primary key takes the partition key, as PostgreSQL requires.
-- Rows outside the days that have a partition land in logs_default.
CREATE TABLE "logs_new" (
	"id" bigint GENERATED ALWAYS AS IDENTITY (sequence name "logs_new_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"project_id" integer NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"context" jsonb,
	"source" text,
	"timestamp" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"pattern_id" integer,
	CONSTRAINT "logs_new_pkey" PRIMARY KEY ("id", "timestamp"),
	CONSTRAINT "logs_new_level_valid" CHECK ("level" in ('error', 'warning', 'info', 'debug'))
) PARTITION BY RANGE ("timestamp");
--> statement-breakpoint
CREATE TABLE "logs_default" PARTITION OF "logs_new" DEFAULT;
--> statement-breakpoint
INSERT INTO "logs_new" ("id", "project_id", "level", "message", "context", "source", "timestamp", "received_at", "pattern_id")
OVERRIDING SYSTEM VALUE
SELECT "id", "project_id", "level", "message", "context", "source", "timestamp", "received_at", "pattern_id" FROM "logs";
--> statement-breakpoint
SELECT setval('logs_new_id_seq', coalesce((SELECT max("id") FROM "logs_new"), 0) + 1, false);
--> statement-breakpoint
DROP TABLE "logs";
--> statement-breakpoint
ALTER TABLE "logs_new" RENAME TO "logs";
--> statement-breakpoint
ALTER SEQUENCE "logs_new_id_seq" RENAME TO "logs_id_seq";
--> statement-breakpoint
ALTER TABLE "logs" RENAME CONSTRAINT "logs_new_pkey" TO "logs_pkey";
--> statement-breakpoint
ALTER TABLE "logs" RENAME CONSTRAINT "logs_new_level_valid" TO "logs_level_valid";
--> statement-breakpoint
ALTER TABLE "logs" ADD CONSTRAINT "logs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "logs_project_time_idx" ON "logs" USING btree ("project_id","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);
--> statement-breakpoint
CREATE INDEX "logs_project_level_time_idx" ON "logs" USING btree ("project_id","level","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);
--> statement-breakpoint
CREATE INDEX "logs_project_pattern_time_idx" ON "logs" USING btree ("project_id","pattern_id","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "pattern_id" is not null;
--> statement-breakpoint
CREATE INDEX "logs_message_trgm_idx" ON "logs" USING gin ("message" gin_trgm_ops);
--> statement-breakpoint
-- Rollups: counts per minute and per hour, appended by triggers (one row per group of each
-- statement, negative for deletes, so concurrent batches never wait on one another's rows) and
-- compacted by the maintenance job. Buckets are whole UTC minutes and hours.
CREATE TABLE "log_counts_minute" (
	"project_id" integer NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"level" text NOT NULL,
	"source" text,
	"count" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "log_counts_hour" (
	"project_id" integer NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"level" text NOT NULL,
	"source" text,
	"count" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "log_counts_minute_idx" ON "log_counts_minute" USING btree ("project_id","bucket");
--> statement-breakpoint
CREATE INDEX "log_counts_hour_idx" ON "log_counts_hour" USING btree ("project_id","bucket");
--> statement-breakpoint
CREATE FUNCTION "logs_rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log_counts_minute (project_id, bucket, level, source, count)
    SELECT project_id, date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00'), level, source, count(*)
      FROM new_rows GROUP BY 1, 2, 3, 4;
  INSERT INTO log_counts_hour (project_id, bucket, level, source, count)
    SELECT project_id, date_bin('1 hour', "timestamp", '2000-01-01 00:00:00+00'), level, source, count(*)
      FROM new_rows GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "logs_rollup_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log_counts_minute (project_id, bucket, level, source, count)
    SELECT project_id, date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00'), level, source, -count(*)
      FROM old_rows GROUP BY 1, 2, 3, 4;
  INSERT INTO log_counts_hour (project_id, bucket, level, source, count)
    SELECT project_id, date_bin('1 hour', "timestamp", '2000-01-01 00:00:00+00'), level, source, -count(*)
      FROM old_rows GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "logs_rollup_after_insert" AFTER INSERT ON "logs" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "logs_rollup_insert"();
--> statement-breakpoint
CREATE TRIGGER "logs_rollup_after_delete" AFTER DELETE ON "logs" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "logs_rollup_delete"();
--> statement-breakpoint
INSERT INTO "log_counts_minute" ("project_id", "bucket", "level", "source", "count")
SELECT "project_id", date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00'), "level", "source", count(*) FROM "logs" GROUP BY 1, 2, 3, 4;
--> statement-breakpoint
INSERT INTO "log_counts_hour" ("project_id", "bucket", "level", "source", "count")
SELECT "project_id", date_bin('1 hour', "timestamp", '2000-01-01 00:00:00+00'), "level", "source", count(*) FROM "logs" GROUP BY 1, 2, 3, 4;
--> statement-breakpoint
-- Creates the daily partitions of a span of days that do not exist yet. A day whose rows already
-- sit in logs_default is skipped (attaching it would fail); its rows stay where they are.
CREATE FUNCTION "logs_ensure_partitions"(first_day date, last_day date) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  d date := first_day;
  created integer := 0;
  name text;
BEGIN
  WHILE d <= last_day LOOP
    name := 'logs_p' || to_char(d, 'YYYYMMDD');
    IF to_regclass(name) IS NULL AND NOT EXISTS (
      SELECT 1 FROM logs_default
       WHERE "timestamp" >= (d::timestamp AT TIME ZONE 'UTC') AND "timestamp" < ((d + 1)::timestamp AT TIME ZONE 'UTC')
    ) THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF logs FOR VALUES FROM (%L) TO (%L)', name,
        (d::timestamp AT TIME ZONE 'UTC'), ((d + 1)::timestamp AT TIME ZONE 'UTC'));
      created := created + 1;
    END IF;
    d := d + 1;
  END LOOP;
  RETURN created;
END
$$;
--> statement-breakpoint
SELECT "logs_ensure_partitions"((now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date + 7);
