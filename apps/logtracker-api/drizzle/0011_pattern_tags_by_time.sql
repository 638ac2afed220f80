ALTER TABLE "log_patterns" DROP CONSTRAINT "log_patterns_pkey";
--> statement-breakpoint
ALTER TABLE "log_patterns" ADD CONSTRAINT "log_patterns_pkey" PRIMARY KEY("project_id","timestamp","log_id");