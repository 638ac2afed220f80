-- Rollups by dimension, at three grains. The statistics of a range read the coarsest buckets
-- that tile it: whole days, then hours and minutes at its ends. And levels and sources get a
-- table each: a bucket holds four level rows and one row per source, where rows per level and
-- source multiply the two (40 a minute for ten sources), which is what a range read.
CREATE TABLE "log_level_counts" (
	"project_id" integer NOT NULL,
	"grain" text NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"level" text NOT NULL,
	"count" integer NOT NULL,
	"compacted" boolean DEFAULT false NOT NULL,
	CONSTRAINT "log_level_counts_grain_valid" CHECK ("log_level_counts"."grain" in ('minute', 'hour', 'day'))
);
--> statement-breakpoint
CREATE TABLE "log_source_counts" (
	"project_id" integer NOT NULL,
	"grain" text NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"source" text,
	"count" integer NOT NULL,
	"compacted" boolean DEFAULT false NOT NULL,
	CONSTRAINT "log_source_counts_grain_valid" CHECK ("log_source_counts"."grain" in ('minute', 'hour', 'day'))
);
--> statement-breakpoint
-- Every column a statistics query reads, so that it reads the index alone.
CREATE INDEX "log_level_counts_idx" ON "log_level_counts" USING btree ("project_id","grain","bucket","level","count");
--> statement-breakpoint
CREATE INDEX "log_level_counts_fresh_idx" ON "log_level_counts" USING btree ("project_id","grain","bucket") WHERE not "log_level_counts"."compacted";
--> statement-breakpoint
CREATE INDEX "log_source_counts_idx" ON "log_source_counts" USING btree ("project_id","grain","bucket","source","count");
--> statement-breakpoint
CREATE INDEX "log_source_counts_fresh_idx" ON "log_source_counts" USING btree ("project_id","grain","bucket") WHERE not "log_source_counts"."compacted";
--> statement-breakpoint
-- The counts so far, from the old rollups (minutes for the last days, hours for two months, which
-- also make the days): the same horizons the new ones keep.
INSERT INTO "log_level_counts" ("project_id", "grain", "bucket", "level", "count", "compacted")
SELECT "project_id", 'minute', "bucket", "level", sum("count"), true FROM "log_counts_minute" GROUP BY 1, 3, 4 HAVING sum("count") <> 0
UNION ALL
SELECT "project_id", 'hour', "bucket", "level", sum("count"), true FROM "log_counts_hour" GROUP BY 1, 3, 4 HAVING sum("count") <> 0
UNION ALL
SELECT "project_id", 'day', date_bin('1 day', "bucket", '2000-01-01 00:00:00+00'), "level", sum("count"), true FROM "log_counts_hour" GROUP BY 1, 3, 4 HAVING sum("count") <> 0;
--> statement-breakpoint
INSERT INTO "log_source_counts" ("project_id", "grain", "bucket", "source", "count", "compacted")
SELECT "project_id", 'minute', "bucket", "source", sum("count"), true FROM "log_counts_minute" GROUP BY 1, 3, 4 HAVING sum("count") <> 0
UNION ALL
SELECT "project_id", 'hour', "bucket", "source", sum("count"), true FROM "log_counts_hour" GROUP BY 1, 3, 4 HAVING sum("count") <> 0
UNION ALL
SELECT "project_id", 'day', date_bin('1 day', "bucket", '2000-01-01 00:00:00+00'), "source", sum("count"), true FROM "log_counts_hour" GROUP BY 1, 3, 4 HAVING sum("count") <> 0;
--> statement-breakpoint
-- The triggers group the statement's rows once, by minute, level and source, and append one row
-- per group of each grain to each table: minutes make hours and days.
CREATE OR REPLACE FUNCTION "logs_rollup_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH minutes AS (
    SELECT project_id, date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00') AS bucket, level, source, count(*)::int AS n
      FROM new_rows GROUP BY 1, 2, 3, 4
  ), grains AS (
    SELECT m.project_id, g.grain, date_bin(g.width, m.bucket, '2000-01-01 00:00:00+00') AS bucket, m.level, m.source, m.n
      FROM minutes m
     CROSS JOIN (VALUES ('minute', interval '1 minute'), ('hour', interval '1 hour'), ('day', interval '1 day')) AS g (grain, width)
  ), levels AS (
    INSERT INTO log_level_counts (project_id, grain, bucket, level, count)
    SELECT project_id, grain, bucket, level, sum(n) FROM grains GROUP BY 1, 2, 3, 4
  )
  INSERT INTO log_source_counts (project_id, grain, bucket, source, count)
  SELECT project_id, grain, bucket, source, sum(n) FROM grains GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "logs_rollup_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH minutes AS (
    SELECT project_id, date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00') AS bucket, level, source, -count(*)::int AS n
      FROM old_rows GROUP BY 1, 2, 3, 4
  ), grains AS (
    SELECT m.project_id, g.grain, date_bin(g.width, m.bucket, '2000-01-01 00:00:00+00') AS bucket, m.level, m.source, m.n
      FROM minutes m
     CROSS JOIN (VALUES ('minute', interval '1 minute'), ('hour', interval '1 hour'), ('day', interval '1 day')) AS g (grain, width)
  ), levels AS (
    INSERT INTO log_level_counts (project_id, grain, bucket, level, count)
    SELECT project_id, grain, bucket, level, sum(n) FROM grains GROUP BY 1, 2, 3, 4
  )
  INSERT INTO log_source_counts (project_id, grain, bucket, source, count)
  SELECT project_id, grain, bucket, source, sum(n) FROM grains GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TABLE "log_counts_hour";
--> statement-breakpoint
DROP TABLE "log_counts_minute";
