-- Schemas by layer: raw (parsed input rows), core (identity-resolved entities), analytics (metrics).
CREATE SCHEMA IF NOT EXISTS raw;
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS analytics;
