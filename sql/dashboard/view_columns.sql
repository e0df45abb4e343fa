-- The documented views (schema main) and their columns, for the SQL page.
SELECT c.table_name AS view, c.column_name AS "column", c.data_type AS type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_catalog, table_schema, table_name)
WHERE t.table_schema = 'main' AND t.table_type = 'VIEW'
ORDER BY c.table_name, c.ordinal_position;
