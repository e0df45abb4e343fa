-- create_recommendations: replace analytics.recommendations with the frame bound as _recommendations.
CREATE OR REPLACE TABLE analytics.recommendations AS SELECT * FROM _recommendations
