-- The User field of the rejected sacct rows (raw.rejected_rows of the sacct ingests): a user
-- whose every row was rejected reaches no user-name column, yet the rejected line names them.
-- A text export's line is split by its ingest's delimiter and the field taken at the position
-- of User in its field list (raw.ingests.info: fields, delimiter), where the line has those
-- fields (parsable: one more, empty, after the trailing delimiter); a JSON export's item gives
-- its "user". Lines that are neither give nothing.
WITH exports AS (
    SELECT ingest_id,
           json_extract_string(info, '$.format') AS format,
           json_extract_string(info, '$.delimiter') AS delim,
           list_position(
               list_transform(
                   CAST(json_extract(info, '$.fields') AS VARCHAR[]), lambda f: lower(f)
               ),
               'user'
           ) AS pos,
           json_array_length(json_extract(info, '$.fields')) AS n_fields
    FROM raw.ingests
    WHERE source = 'sacct'
),
cut AS (
    SELECT e.format, e.pos, e.n_fields, r.raw,
           CASE WHEN e.format <> 'json' AND e.delim IS NOT NULL AND e.delim <> ''
                THEN string_split(r.raw, e.delim) END AS parts
    FROM raw.rejected_rows AS r
    JOIN exports AS e USING (ingest_id)
    WHERE r.source = 'sacct' AND r.raw IS NOT NULL
)
SELECT DISTINCT CASE
    WHEN format = 'json' THEN try(json_extract_string(raw, '$.user'))
    WHEN pos IS NOT NULL AND pos > 0 AND len(parts) IN (n_fields, n_fields + 1) THEN parts[pos]
END AS user_name
FROM cut
