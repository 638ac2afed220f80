-- Accent-insensitive search with unaccent() (its rules fold é, è, ç and ligatures such as œ and æ),
-- and distances on the Earth's surface with earthdistance (ll_to_earth, earth_distance, earth_box),
-- which is built on cube. PostgreSQL ships all three as contrib modules; PGlite loads them from
-- @electric-sql/pglite/contrib (packages/db).
CREATE EXTENSION IF NOT EXISTS unaccent;
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS cube;
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS earthdistance;
