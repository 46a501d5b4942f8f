-- When a run's first `exec` began (Unix milliseconds), so that `maxRunSeconds` counts from it
-- on every host, a replay on another host included. NULL in every row an older version wrote
-- (such a run counts its life from its replay).
ALTER TABLE codemode_runs ADD COLUMN started_at_ms BIGINT;
