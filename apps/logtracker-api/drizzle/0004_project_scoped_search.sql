-- The trigram index holds the project too (btree_gin supplies GIN support for integers): a
-- search reads the matches of its own project only, instead of every project's matches and then
-- their rows, to throw most of them away.
CREATE EXTENSION IF NOT EXISTS btree_gin;
--> statement-breakpoint
CREATE INDEX "logs_project_message_trgm_idx" ON "logs" USING gin ("project_id","message" gin_trgm_ops);
--> statement-breakpoint
DROP INDEX "logs_message_trgm_idx";
