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
-- since whether it was counted cannot be told). A count never goes below 0:
-- an Action decided before v14 was never counted in any bucket.
UPDATE analytics_daily AS a SET
    h0 = max(0, h0 + m.d0), h1 = max(0, h1 + m.d1), h2 = max(0, h2 + m.d2),
    h3 = max(0, h3 + m.d3), h4 = max(0, h4 + m.d4), h5 = max(0, h5 + m.d5),
    h6 = max(0, h6 + m.d6), h7 = max(0, h7 + m.d7), h8 = max(0, h8 + m.d8),
    h9 = max(0, h9 + m.d9), h10 = max(0, h10 + m.d10), h11 = max(0, h11 + m.d11),
    h12 = max(0, h12 + m.d12), h13 = max(0, h13 + m.d13), h14 = max(0, h14 + m.d14)
FROM (SELECT workspace_id, environment, source_id, day,
             sum((new_b = 0) - (old_b = 0)) AS d0, sum((new_b = 1) - (old_b = 1)) AS d1,
             sum((new_b = 2) - (old_b = 2)) AS d2, sum((new_b = 3) - (old_b = 3)) AS d3,
             sum((new_b = 4) - (old_b = 4)) AS d4, sum((new_b = 5) - (old_b = 5)) AS d5,
             sum((new_b = 6) - (old_b = 6)) AS d6, sum((new_b = 7) - (old_b = 7)) AS d7,
             sum((new_b = 8) - (old_b = 8)) AS d8, sum((new_b = 9) - (old_b = 9)) AS d9,
             sum((new_b = 10) - (old_b = 10)) AS d10, sum((new_b = 11) - (old_b = 11)) AS d11,
             sum((new_b = 12) - (old_b = 12)) AS d12, sum((new_b = 13) - (old_b = 13)) AS d13,
             sum((new_b = 14) - (old_b = 14)) AS d14
      FROM (SELECT workspace_id, environment, source_id, substr(created_at, 1, 10) AS day,
                   CASE
            WHEN d <= 10 THEN 0 WHEN d <= 30 THEN 1 WHEN d <= 60 THEN 2 WHEN d <= 120 THEN 3
            WHEN d <= 300 THEN 4 WHEN d <= 600 THEN 5 WHEN d <= 1800 THEN 6 WHEN d <= 3600 THEN 7
            WHEN d <= 7200 THEN 8 WHEN d <= 21600 THEN 9 WHEN d <= 43200 THEN 10 WHEN d <= 86400 THEN 11
            WHEN d <= 172800 THEN 12 WHEN d <= 604800 THEN 13 ELSE 14 END AS old_b,
                   CASE
            WHEN ms <= 10000 THEN 0 WHEN ms <= 30000 THEN 1 WHEN ms <= 60000 THEN 2 WHEN ms <= 120000 THEN 3
            WHEN ms <= 300000 THEN 4 WHEN ms <= 600000 THEN 5 WHEN ms <= 1800000 THEN 6 WHEN ms <= 3600000 THEN 7
            WHEN ms <= 7200000 THEN 8 WHEN ms <= 21600000 THEN 9 WHEN ms <= 43200000 THEN 10 WHEN ms <= 86400000 THEN 11
            WHEN ms <= 172800000 THEN 12 WHEN ms <= 604800000 THEN 13 ELSE 14 END AS new_b
            FROM (SELECT workspace_id, environment, source_id, created_at,
                         (julianday(closed_at) - julianday(created_at)) * 86400.0 AS d,
                         round((julianday(closed_at) - julianday(created_at)) * 86400000.0) AS ms
                  FROM actions
                  WHERE status = 'resolved'
                    AND coalesce(json_extract(resolution, '$.decided_by.type'), '') <> 'system'))
      WHERE old_b <> new_b
      GROUP BY 1, 2, 3, 4) AS m
WHERE a.workspace_id = m.workspace_id AND a.environment = m.environment
  AND a.source_id = m.source_id AND a.day = m.day;
