-- Retention detaches an expired, empty daily partition in one statement, run on its own (no
-- transaction around it): the locks first, each waiting at most `lock_wait_ms`, the partition's and
-- the default partition's, then the logs table's, last; then the check that the day is still empty
-- and the detach. The logs table is held from its lock to the statement's commit, with no round
-- trip to the client between: run as statements of a transaction, every insert waited out the
-- client's next two messages as well (the detach, the commit), a few milliseconds each on a busy
-- machine. Answers false, having detached nothing, when logs arrived for the day since it was
-- emptied (a late backfill: they go first, next run).
CREATE OR REPLACE FUNCTION "logtracker"."logs_detach_empty_partition"(day_table regclass, default_table regclass, lock_wait_ms integer)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
  has_logs boolean;
BEGIN
  PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
  EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', day_table);
  IF default_table IS NOT NULL THEN
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', default_table);
  END IF;
  LOCK TABLE ONLY logs IN ACCESS EXCLUSIVE MODE;
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', day_table) INTO has_logs;
  IF has_logs THEN
    RETURN false;
  END IF;
  EXECUTE format('ALTER TABLE logs DETACH PARTITION %s', day_table);
  RETURN true;
END
$$;
