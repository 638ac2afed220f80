-- Trigram search over names and descriptions, and btree operators in GiST indexes for the
-- exclusion constraint that keeps a provider's appointments from overlapping.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gist;
