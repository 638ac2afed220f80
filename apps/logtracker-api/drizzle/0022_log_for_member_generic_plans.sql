-- A log by id (log_for_member) plans its statements generically from the first call on each
-- connection, not after five custom plans. With plan_cache_mode auto, each of a pool's connections
-- planned the probe of every daily partition afresh for its first five lookups (5–7 ms each, where
-- the generic plan then ran in 0.3 ms): ten connections made fifty slow lookups, a sixth of the
-- bench's two hundred, and its p95. The generic plans are the ones auto settled on: the probe
-- bounded to a day prunes to that day's partition when it starts, and the unbounded one probes
-- the primary key of each partition.
ALTER FUNCTION "logtracker"."log_for_member"(bigint, integer) SET plan_cache_mode = 'force_generic_plan';
