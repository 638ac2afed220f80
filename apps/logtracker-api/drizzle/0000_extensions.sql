-- Trigram matching for case-insensitive substring search over log messages.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
