-- A search's index holds each project's trigrams apart. The trigram index of the message alone
-- (migration 0014) listed every project's logs of a day under each trigram, so that a search fetched
-- and checked every project's matches of its days on their rows: 5 730 other projects' rows for the
-- 26 matches of a small project's word in two days. The keys are pg_trgm's trigrams of the message
-- (show_trgm) that lie within a word (those padded with spaces at the words' ends left out: half as
-- many keys to insert), each hashed and qualified by the project in one bigint: the project in the
-- high 32 bits, the trigram's hash in the low ones. A search looks up the keys its text is sure to
-- hold in any message that contains it (log_search_query_keys) and checks the message itself
-- (ILIKE) on the rows they find.
-- Rebuilds the index on each partition of logs: on a large deployment, run it at a quiet hour.
CREATE FUNCTION "logtracker"."log_search_keys"(project integer, message text) RETURNS bigint[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(
  SELECT (project::bigint << 32) | (hashtext(t)::bigint & 4294967295)
    FROM unnest(public.show_trgm(message)) AS t
   WHERE strpos(t, ' ') = 0
);
--> statement-breakpoint
-- The keys every message containing `search` holds: the trigrams show_trgm gives the text that it
-- also gives the text wrapped in 'a' and in 'b'. Those it gives for the ends of the text's first and
-- last words (padded as if a word began or ended there, which in a longer message it may not) change
-- with the wrapping letter and drop out; a multibyte trigram shows as a hash, padded or not, and is
-- kept only when it survives the same test. No key (a text without three letters or digits in a
-- row): the index cannot help, and the caller does not use it.
CREATE FUNCTION "logtracker"."log_search_query_keys"(project integer, search text) RETURNS bigint[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(
  SELECT (project::bigint << 32) | (hashtext(k.t)::bigint & 4294967295)
    FROM (SELECT unnest(public.show_trgm(search))
          INTERSECT SELECT unnest(public.show_trgm('a' || search || 'a'))
          INTERSECT SELECT unnest(public.show_trgm('b' || search || 'b'))) AS k(t)
   WHERE strpos(k.t, ' ') = 0
);
--> statement-breakpoint
DROP INDEX "logtracker"."logs_message_trgm_idx";--> statement-breakpoint
CREATE INDEX "logs_search_keys_idx" ON "logtracker"."logs" USING gin (logtracker.log_search_keys("project_id", "message"));--> statement-breakpoint
-- No planner statistics for the keys: ANALYZE would compute them on every sampled row (30 000 per
-- partition, 0.6 s where the partition's own statistics take 0.09), and no plan needs them: the
-- searches are sized by the message's statistics. Set on the partitions' indexes, which do not
-- inherit it, here and as each day's partition is made (logs_ensure_partitions).
CREATE FUNCTION "logtracker"."logs_search_keys_without_statistics"(part regclass) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  idx regclass;
BEGIN
  FOR idx IN
    SELECT x.indexrelid::regclass FROM pg_index x
     WHERE x.indrelid = part AND pg_get_indexdef(x.indexrelid) LIKE '%log_search_keys(%'
  LOOP
    EXECUTE format('ALTER INDEX %s ALTER COLUMN 1 SET STATISTICS 0', idx);
  END LOOP;
END
$$;
--> statement-breakpoint
DO $$
DECLARE
  child regclass;
BEGIN
  FOR child IN SELECT i.inhrelid::regclass FROM pg_inherits i WHERE i.inhparent = '"logtracker"."logs"'::regclass LOOP
    PERFORM "logtracker"."logs_search_keys_without_statistics"(child);
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
      PERFORM logs_search_keys_without_statistics(name::regclass);
      created := created + 1;
    END IF;
    d := d + 1;
  END LOOP;
  RETURN created;
END
$$;
