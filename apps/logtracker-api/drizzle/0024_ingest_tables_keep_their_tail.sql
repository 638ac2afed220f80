-- The tables every ingest writes to, and that jobs delete from in bulk, keep their empty tail pages
-- through a vacuum (vacuum_truncate = false). A vacuum that finds empty pages at a table's end
-- truncates them under an ACCESS EXCLUSIVE lock, which every insert then waits out: the bench saw
-- inserts of logs wait 68–99 ms on the statistics rollups (written by the logs' trigger) behind
-- autovacuum's truncation, after retention and the rollup merges had deleted their rows. Pages left
-- empty are reused by the next inserts; what is never returned is at most the table's churn.
ALTER TABLE "logtracker"."log_level_counts" SET (vacuum_truncate = false);--> statement-breakpoint
ALTER TABLE "logtracker"."log_source_counts" SET (vacuum_truncate = false);--> statement-breakpoint
ALTER TABLE "logtracker"."idempotency_keys" SET (vacuum_truncate = false);--> statement-breakpoint
ALTER TABLE "logtracker"."rate_limit_counters" SET (vacuum_truncate = false);
