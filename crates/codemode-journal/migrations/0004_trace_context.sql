-- The W3C trace context (`traceparent`) of a run's first `exec`, so that its later legs, a
-- replay on another host included, continue the same trace. NULL for a run started without
-- OpenTelemetry, and in every row an older version wrote.
ALTER TABLE codemode_runs ADD COLUMN trace_context TEXT;
