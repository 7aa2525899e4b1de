-- Run once, when the Postgres volume is first initialised: the extensions the substrate uses.
-- (The embedded stack does the same on a bare machine.)
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
