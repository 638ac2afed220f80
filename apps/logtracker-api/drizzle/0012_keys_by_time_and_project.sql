-- Every key of the tables a Citus cluster would distribute by project carries project_id
-- (infra/SCALING.md): the logs' key gains it last, so that a log is still found by its id alone.
-- Pattern tags are keyed by the log's time and id within the project, as the logs' own index
-- orders them: mining appends to the key, and expired tags are a prefix of a project's.
-- Rebuilds the key's index on each partition of logs.
ALTER TABLE "logtracker"."patterns" DROP CONSTRAINT "patterns_pkey";--> statement-breakpoint
ALTER TABLE "logtracker"."patterns" ADD CONSTRAINT "patterns_pkey" PRIMARY KEY("id","project_id");--> statement-breakpoint
ALTER TABLE "logtracker"."logs" DROP CONSTRAINT "logs_pkey";--> statement-breakpoint
ALTER TABLE "logtracker"."logs" ADD CONSTRAINT "logs_pkey" PRIMARY KEY("id","timestamp","project_id");--> statement-breakpoint
ALTER TABLE "logtracker"."log_patterns" DROP CONSTRAINT "log_patterns_pkey";--> statement-breakpoint
ALTER TABLE "logtracker"."log_patterns" ADD CONSTRAINT "log_patterns_pkey" PRIMARY KEY("project_id","timestamp","log_id");
