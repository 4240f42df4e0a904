-- hds schema v48: a decision time exactly on a bucket's upper bound (2 h to
-- the millisecond, say) is counted in that bucket, as the guide says
-- ("Analytics": upper bounds), not in the next one. The triggers before
-- compared seconds computed from julianday(), whose floating-point error put
-- exactly 1800 s or 7200 s a few microseconds over the bound. The time is
-- now rounded to whole milliseconds (timestamps have millisecond precision)
-- and compared with the bounds in milliseconds.
DROP TRIGGER analytics_action_decided;
CREATE TRIGGER analytics_action_decided AFTER UPDATE OF status ON actions
WHEN OLD.status = 'open' AND NEW.status = 'resolved'
 AND (coalesce(json_extract(NEW.resolution, '$.decided_by.type'), '') <> 'system'
      OR json_extract(NEW.resolution, '$.decided_by.id') = 'approval_policy') BEGIN
    INSERT INTO analytics_daily(workspace_id, environment, source_id, day, decided, approved,
                                h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14)
    SELECT NEW.workspace_id, NEW.environment, NEW.source_id, substr(NEW.created_at, 1, 10), 1,
           coalesce(
               json_extract(NEW.resolution, '$.option_id') = 'approve'
               OR EXISTS (SELECT 1 FROM json_each(NEW.spec, '$.options') o
                          WHERE json_extract(o.value, '$.id') = json_extract(NEW.resolution, '$.option_id')
                            AND json_extract(o.value, '$.style') = 'primary')
               OR (json_type(NEW.spec, '$.approval_policy') = 'object'
                   AND (json_type(NEW.resolution, '$.response.value') = 'true'
                        OR json_extract(NEW.spec, '$.options[0].id')
                           = json_extract(NEW.resolution, '$.option_id'))), 0),
           b = 0, b = 1, b = 2, b = 3, b = 4, b = 5, b = 6, b = 7, b = 8, b = 9, b = 10,
           b = 11, b = 12, b = 13, b = 14
    FROM (SELECT CASE
            WHEN ms <= 10000 THEN 0 WHEN ms <= 30000 THEN 1 WHEN ms <= 60000 THEN 2 WHEN ms <= 120000 THEN 3
            WHEN ms <= 300000 THEN 4 WHEN ms <= 600000 THEN 5 WHEN ms <= 1800000 THEN 6 WHEN ms <= 3600000 THEN 7
            WHEN ms <= 7200000 THEN 8 WHEN ms <= 21600000 THEN 9 WHEN ms <= 43200000 THEN 10 WHEN ms <= 86400000 THEN 11
            WHEN ms <= 172800000 THEN 12 WHEN ms <= 604800000 THEN 13 ELSE 14 END AS b
          FROM (SELECT round((julianday(NEW.closed_at) - julianday(NEW.created_at)) * 86400000.0) AS ms))
    WHERE true
    ON CONFLICT(workspace_id, environment, day, source_id) DO UPDATE SET
        decided = decided + 1,
        approved = approved + excluded.approved,
        h0 = h0 + excluded.h0, h1 = h1 + excluded.h1, h2 = h2 + excluded.h2,
        h3 = h3 + excluded.h3, h4 = h4 + excluded.h4, h5 = h5 + excluded.h5,
        h6 = h6 + excluded.h6, h7 = h7 + excluded.h7, h8 = h8 + excluded.h8,
        h9 = h9 + excluded.h9, h10 = h10 + excluded.h10, h11 = h11 + excluded.h11,
        h12 = h12 + excluded.h12, h13 = h13 + excluded.h13, h14 = h14 + excluded.h14;
END;

-- Decisions already counted in the wrong bucket move to the right one: those
-- by a person or a Source, which every trigger since v14 counted (a quorum's
-- resolution was counted from v17 on; one exactly on a bound is not moved,
-- since whether it was counted cannot be told). Only a time exactly on a
-- bound was misfiled, always one bucket too high, so each bound moves its
-- Actions from the bucket above it to its own: as many as that bucket holds
-- at most (an Action decided before v14 was never counted), so the buckets
-- still add up to `decided`.
-- One pass over the Actions finds them (a million take a few seconds).
CREATE TEMP TABLE misfiled AS
SELECT workspace_id, environment, source_id, day, b, count(*) AS n
  FROM (SELECT workspace_id, environment, source_id, substr(created_at, 1, 10) AS day,
               CASE ms
                WHEN 10000 THEN 0 WHEN 30000 THEN 1 WHEN 60000 THEN 2 WHEN 120000 THEN 3 WHEN
                300000 THEN 4 WHEN 600000 THEN 5 WHEN 1800000 THEN 6 WHEN 3600000 THEN 7 WHEN
                7200000 THEN 8 WHEN 21600000 THEN 9 WHEN 43200000 THEN 10 WHEN 86400000 THEN 11
                WHEN 172800000 THEN 12 WHEN 604800000 THEN 13 END AS b,
               d, ms
          FROM (SELECT workspace_id, environment, source_id, created_at,
                       (julianday(closed_at) - julianday(created_at)) * 86400.0 AS d,
                       round((julianday(closed_at) - julianday(created_at)) * 86400000.0) AS ms
                  FROM actions
                 WHERE status = 'resolved'
                   AND coalesce(json_extract(resolution, '$.decided_by.type'), '') <> 'system'))
 WHERE b IS NOT NULL AND d * 1000.0 > ms
 GROUP BY 1, 2, 3, 4, 5;
UPDATE analytics_daily AS a SET h0 = h0 + min(a.h1, m.n), h1 = h1 - min(a.h1, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 0 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h1 = h1 + min(a.h2, m.n), h2 = h2 - min(a.h2, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 1 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h2 = h2 + min(a.h3, m.n), h3 = h3 - min(a.h3, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 2 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h3 = h3 + min(a.h4, m.n), h4 = h4 - min(a.h4, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 3 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h4 = h4 + min(a.h5, m.n), h5 = h5 - min(a.h5, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 4 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h5 = h5 + min(a.h6, m.n), h6 = h6 - min(a.h6, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 5 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h6 = h6 + min(a.h7, m.n), h7 = h7 - min(a.h7, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 6 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h7 = h7 + min(a.h8, m.n), h8 = h8 - min(a.h8, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 7 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h8 = h8 + min(a.h9, m.n), h9 = h9 - min(a.h9, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 8 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h9 = h9 + min(a.h10, m.n), h10 = h10 - min(a.h10, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 9 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h10 = h10 + min(a.h11, m.n), h11 = h11 - min(a.h11, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 10 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h11 = h11 + min(a.h12, m.n), h12 = h12 - min(a.h12, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 11 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h12 = h12 + min(a.h13, m.n), h13 = h13 - min(a.h13, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 12 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
UPDATE analytics_daily AS a SET h13 = h13 + min(a.h14, m.n), h14 = h14 - min(a.h14, m.n)
  FROM temp.misfiled AS m
 WHERE m.b = 13 AND a.workspace_id = m.workspace_id AND a.environment = m.environment
   AND a.source_id = m.source_id AND a.day = m.day;
DROP TABLE temp.misfiled;
