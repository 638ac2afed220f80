-- Every key of the tables a Citus cluster would distribute by project carries project_id
-- (infra/SCALING.md): the logs' key gains it last, so that a log is still found by its id alone.
-- Rebuilds the key's index on each partition of logs.
ALTER TABLE "patterns" DROP CONSTRAINT "patterns_pkey";--> statement-breakpoint
ALTER TABLE "patterns" ADD CONSTRAINT "patterns_pkey" PRIMARY KEY("id","project_id");--> statement-breakpoint
ALTER TABLE "logs" DROP CONSTRAINT "logs_pkey";--> statement-breakpoint
ALTER TABLE "logs" ADD CONSTRAINT "logs_pkey" PRIMARY KEY("id","timestamp","project_id");
