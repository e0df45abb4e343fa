-- create_proposals: replace analytics.recommendation_proposals with the merged proposal record bound as _proposals.
CREATE OR REPLACE TABLE analytics.recommendation_proposals AS SELECT * FROM _proposals
