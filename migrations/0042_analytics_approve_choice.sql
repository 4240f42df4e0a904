-- hds schema v42: on an Action with an approval policy, "approve" is the
-- first option or `true` (guide: "approval_policy"), so a decision with it
-- counts as approved in analytics too, whatever the option is called or
-- styled. Counts already made are left as they were.
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
            WHEN d <= 10 THEN 0 WHEN d <= 30 THEN 1 WHEN d <= 60 THEN 2 WHEN d <= 120 THEN 3
            WHEN d <= 300 THEN 4 WHEN d <= 600 THEN 5 WHEN d <= 1800 THEN 6 WHEN d <= 3600 THEN 7
            WHEN d <= 7200 THEN 8 WHEN d <= 21600 THEN 9 WHEN d <= 43200 THEN 10
            WHEN d <= 86400 THEN 11 WHEN d <= 172800 THEN 12 WHEN d <= 604800 THEN 13 ELSE 14 END AS b
          FROM (SELECT (julianday(NEW.closed_at) - julianday(NEW.created_at)) * 86400.0 AS d))
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
