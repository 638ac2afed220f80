-- The ids each daily partition of logs holds (schema: logPartitionIds), so that a log looked up by
-- id is probed in the partitions whose range holds its id rather than in every one: an id says
-- nothing of its log's day, and log_for_member descended the primary key of each of the 40
-- partitions of a month of logs (120 index pages, 0.46 ms of a 0.6 ms lookup).
CREATE TABLE "logtracker"."log_partition_ids" (
	"day" timestamp with time zone PRIMARY KEY NOT NULL,
	"min_id" bigint NOT NULL,
	"max_id" bigint
);
--> statement-breakpoint
-- Reads the least and greatest id of every daily partition (two descents of its primary key each)
-- and replaces the table's rows with them: the days ending less than two days ago are left open
-- above (max_id null), as the logs arriving now, late ones included, land there; an empty
-- partition has no row. One refresh at a time (instances may run theirs together). Answers the
-- rows the table now holds.
CREATE FUNCTION "logtracker"."log_partition_ids_refresh"() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  part record;
  least_id bigint;
  greatest_id bigint;
  kept integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('logtracker.log_partition_ids'));
  DELETE FROM logtracker.log_partition_ids;
  FOR part IN
    SELECT c.relname AS name, to_date(substr(c.relname, 7, 8), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC' AS day
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'logtracker.logs'::regclass AND c.relname ~ '^logs_p[0-9]{8}$'
  LOOP
    BEGIN
      EXECUTE format('SELECT min(id), max(id) FROM logtracker.%I', part.name) INTO least_id, greatest_id;
    EXCEPTION WHEN undefined_table THEN
      -- Dropped since the catalogue was read (retention).
      CONTINUE;
    END;
    CONTINUE WHEN least_id IS NULL;
    INSERT INTO logtracker.log_partition_ids (day, min_id, max_id)
    VALUES (part.day, least_id, CASE WHEN part.day + interval '72 hours' > now() THEN NULL ELSE greatest_id END);
  END LOOP;
  SELECT count(*) INTO kept FROM logtracker.log_partition_ids;
  RETURN kept;
END
$$;
--> statement-breakpoint
-- A log by id for a member of its project: first in the days whose ids hold it (log_partition_ids),
-- newest first, each probe bounded to its day so that it reads that partition alone, when at most
-- three days do (logs stored as they happen: today's, and a late one's day); then, when none had
-- it (a late log of an old day stored since the ranges were read, a log of the default partition,
-- an id no log has) or when more days hold the id (history back-filled in any order of time), in
-- every partition, as before. PL/pgSQL keeps each statement's plan for the session; with
-- plan_cache_mode back to auto for the call, the plans are generic after a few runs, the same for
-- every id, and the bounded probe prunes at its start.
CREATE OR REPLACE FUNCTION "logtracker"."log_for_member"(log_id bigint, member_id integer) RETURNS SETOF "logtracker"."logs"
LANGUAGE plpgsql STABLE
SET plan_cache_mode = 'auto'
AS $$
DECLARE
  days timestamptz[];
  day_start timestamptz;
BEGIN
  SELECT array_agg(r.day ORDER BY r.day DESC) INTO days
    FROM (SELECT day FROM log_partition_ids
           WHERE min_id <= log_id AND (max_id IS NULL OR log_id <= max_id)
           ORDER BY day DESC LIMIT 4) r;
  IF cardinality(days) <= 3 THEN
    FOREACH day_start IN ARRAY days LOOP
      RETURN QUERY
        SELECT l.* FROM logs l
         WHERE l.id = log_id AND l."timestamp" >= day_start AND l."timestamp" < day_start + interval '24 hours'
           AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = l.project_id AND m.user_id = member_id)
         LIMIT 1;
      IF FOUND THEN
        RETURN;
      END IF;
    END LOOP;
  END IF;
  RETURN QUERY
    SELECT l.* FROM logs l
     WHERE l.id = log_id
       AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = l.project_id AND m.user_id = member_id)
     LIMIT 1;
END
$$;
