-- The search keys common in a project's recent logs, which a search leaves to the message's own
-- check (schema: logSearchCommonKeys). A rare token of a 4-million-log day, searched with all six
-- of its keys, read 259 index pages for its 52 matches: the rarest key finds them, and each is then
-- looked up in the other keys' posting trees, three of them holding a quarter to half of the
-- project's logs. With the three rare keys alone, 10 pages.
CREATE TABLE "logtracker"."log_search_common_keys" (
	"project_id" integer NOT NULL,
	"key" bigint NOT NULL,
	"share" real NOT NULL,
	CONSTRAINT "log_search_common_keys_project_id_key_pk" PRIMARY KEY("project_id","key")
);
--> statement-breakpoint
-- The keys held by at least `min_share` of a project's logs stamped since `since`, counted on a
-- sample of about `sample_rows` of them (SYSTEM: whole pages, sized by the partitions' pages),
-- for the projects with at least `min_logs` logs in the sample; the others' keys are all treated
-- as rare, as before. The hour's key (negative: log_hour_key) is left out: no text has it. One
-- refresh at a time (instances may run theirs together): the next waits and replaces it. Replaces what the table held; answers the rows it now holds.
CREATE FUNCTION "logtracker"."log_search_refresh_common_keys"(since timestamptz, sample_rows integer, min_share real, min_logs integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  total float8;
  pct float8;
  kept integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('logtracker.log_search_common_keys'));
  -- The partitions' pages now (their statistics may trail a burst, or be missing), at the rows a
  -- page held when last analysed (40 where never).
  SELECT coalesce(sum(pg_relation_size(c.oid) / 8192.0
                      * CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 40 END), 0) INTO total
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'logtracker.logs'::regclass
     AND c.relname >= 'logs_p' || to_char(since AT TIME ZONE 'UTC', 'YYYYMMDD');
  pct := least(100, greatest(0.001, 100.0 * sample_rows / greatest(total, 1)));
  DELETE FROM logtracker.log_search_common_keys;
  INSERT INTO logtracker.log_search_common_keys (project_id, key, share)
  WITH sample AS (
    SELECT l.project_id, l.message FROM logtracker.logs l TABLESAMPLE SYSTEM (pct) WHERE l."timestamp" >= since
  ), sizes AS (
    SELECT s.project_id, count(*) AS n FROM sample s GROUP BY s.project_id HAVING count(*) >= min_logs
  )
  SELECT s.project_id, k.key, (count(*)::float8 / z.n)::real
    FROM sample s
    JOIN sizes z ON z.project_id = s.project_id
   CROSS JOIN LATERAL unnest(logtracker.log_search_keys(s.project_id, s.message, now())) AS k(key)
   WHERE k.key >= 0
   GROUP BY s.project_id, k.key, z.n
  HAVING count(*) >= min_share * z.n;
  GET DIAGNOSTICS kept = ROW_COUNT;
  RETURN kept;
END
$$;
--> statement-breakpoint
-- The keys a search of `search` looks up (log_search_query_keys): those not common in the project
-- when it has some, else all of them. Any subset finds every match, the message being checked on
-- each row found. Declared IMMUTABLE though it reads a table, on purpose: a stale answer (a plan
-- made before a refresh) changes only which keys narrow the rows, never the rows a search finds,
-- and an immutable call is computed once as a statement is planned for its values. Declared
-- STABLE, the planner computed it again for the estimates and each partition's scan computed it as
-- it started: an uncommon word's slice of a 2-million-log project planned in 1.67 ms instead of
-- 0.69 and ran in 2.1 instead of 1.6. In PL/pgSQL, whose statements keep their plans for the
-- session: as an SQL function it planned its own query at each call (1.2 ms to plan the slice).
CREATE FUNCTION "logtracker"."log_search_rare_query_keys"(project integer, search text) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  every bigint[] := logtracker.log_search_query_keys(project, search);
  rare bigint[];
BEGIN
  SELECT array_agg(e.key) INTO rare
    FROM unnest(every) AS e(key)
   WHERE NOT EXISTS (SELECT 1 FROM logtracker.log_search_common_keys c WHERE c.project_id = project AND c.key = e.key);
  RETURN CASE WHEN cardinality(rare) > 0 THEN rare ELSE every END;
END
$$;
