import { pgSchema } from 'drizzle-orm/pg-core';

/**
 * The PostgreSQL schema that holds every table of the log tracker and its migrations table, so that
 * it can share one database with the other app (see packages/db: the connections' search_path).
 */
export const logtrackerSchema = pgSchema('logtracker');
