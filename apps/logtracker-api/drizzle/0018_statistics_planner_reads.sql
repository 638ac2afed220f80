-- The statistics of a logs partition are gathered for the columns a plan reads, and no others.
-- ANALYZE of a partition is redone as ingest grows it by a tenth (log-statistics.service.ts), and
-- its cost was half spent on two columns no statement filters, sorts or joins on: the context
-- (sorting 30 000 sampled jsonb values) and the time a log was received. On a partition of 167 000
-- rows, 120-137 ms an analysis with them, 68-77 ms without: during sustained ingest, a tenth of the
-- database's time. Set on the partitions, which do not inherit it, here and as each day's partition
-- is made (logs_ensure_partitions); the keys' index keeps no statistics either (migration 0017).
DROP FUNCTION "logtracker"."logs_search_keys_without_statistics"(regclass);
--> statement-breakpoint
CREATE FUNCTION "logtracker"."logs_partition_statistics"(part regclass) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  idx regclass;
BEGIN
  EXECUTE format('ALTER TABLE %s ALTER COLUMN context SET STATISTICS 0, ALTER COLUMN received_at SET STATISTICS 0', part);
  FOR idx IN
    SELECT x.indexrelid::regclass FROM pg_index x
     WHERE x.indrelid = part AND pg_get_indexdef(x.indexrelid) LIKE '%log_search_keys(%'
  LOOP
    EXECUTE format('ALTER INDEX %s ALTER COLUMN 1 SET STATISTICS 0', idx);
  END LOOP;
END
$$;
--> statement-breakpoint
ALTER TABLE "logtracker"."logs" ALTER COLUMN "context" SET STATISTICS 0, ALTER COLUMN "received_at" SET STATISTICS 0;
--> statement-breakpoint
DO $$
DECLARE
  child regclass;
BEGIN
  FOR child IN SELECT i.inhrelid::regclass FROM pg_inherits i WHERE i.inhparent = '"logtracker"."logs"'::regclass LOOP
    PERFORM "logtracker"."logs_partition_statistics"(child);
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "logtracker"."logs_ensure_partitions"(first_day date, last_day date) RETURNS integer LANGUAGE plpgsql AS $$
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
      PERFORM logs_partition_statistics(name::regclass);
      created := created + 1;
    END IF;
    d := d + 1;
  END LOOP;
  RETURN created;
END
$$;
