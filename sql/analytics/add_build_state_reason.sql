-- The plan's reason (why a build ran in full, or 'incremental') on analytics.build_state of a
-- warehouse built before the column existed (its earlier rows keep NULL).
ALTER TABLE analytics.build_state ADD COLUMN IF NOT EXISTS reason VARCHAR
