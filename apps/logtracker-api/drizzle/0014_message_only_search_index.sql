-- The trigram index loses the project key migration 0004 gave it: that key's posting list names
-- every log of the project in the partition, and GIN walked it beside the trigrams' own lists, so
-- a search's index lookup grew with the project (1 448 pages for a word in 0.12 % of 4 million
-- logs; 48 without the key). The project is checked on the rows the trigrams find.
-- Rebuilds the index on each partition of logs: on a large deployment, run it at a quiet hour.
DROP INDEX "logtracker"."logs_project_message_trgm_idx";--> statement-breakpoint
CREATE INDEX "logs_message_trgm_idx" ON "logtracker"."logs" USING gin ("message" gin_trgm_ops);
