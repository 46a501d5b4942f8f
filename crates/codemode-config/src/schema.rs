//! The JSON Schema of `tools.codeMode` (`docs/config.schema.json`): wire types that exist for
//! schemars only, whose defaults are [`CodeModeConfig::default`]'s values.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CodeModeConfig;
use crate::Language;

/// Code mode: `true`, `false`, or an object whose `enabled: true` turns it on.
#[derive(JsonSchema, Deserialize)]
#[serde(untagged)]
#[schemars(title = "tools.codeMode")]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
pub(super) enum CodeModeConfigWire {
    /// `true` enables code mode with the defaults; `false` disables it.
    Toggle(bool),
    /// Explicit settings; code mode stays off unless `enabled` is `true`.
    Settings(CodeModeSettings),
}

// Every field is optional and none is nullable: the parser refuses `null`, so the schema does
// too. The fields are not `Option`s (schemars would add `"null"` to their types); their serde
// defaults only put each field's `default` into the schema.
#[derive(JsonSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
pub(super) struct CodeModeSettings {
    /// The activation switch; other fields never enable code mode.
    #[serde(default)]
    enabled: bool,
    /// Wall-clock budget of each exec/wait call in ms (clamped to 100..=60000).
    #[serde(default = "defaults::timeout_ms")]
    #[schemars(range(min = 1))]
    timeout_ms: u64,
    /// Guest VM memory limit in bytes (clamped to 1 MiB..=1 GiB).
    #[serde(default = "defaults::memory_limit_bytes")]
    #[schemars(range(min = 1))]
    memory_limit_bytes: u64,
    /// Output plus final value limit in UTF-8 JSON bytes (clamped to 1024..=10 MiB).
    #[serde(default = "defaults::max_output_bytes")]
    #[schemars(range(min = 1))]
    max_output_bytes: u64,
    /// Parked run memory limit in bytes (clamped to 1024..=256 MiB).
    #[serde(default = "defaults::max_snapshot_bytes")]
    #[schemars(range(min = 1))]
    max_snapshot_bytes: u64,
    /// Nested calls in flight per run (clamped to 1..=128).
    #[serde(default = "defaults::max_pending_tool_calls")]
    #[schemars(range(min = 1))]
    max_pending_tool_calls: u64,
    /// Nested calls waiting in FIFO order behind maxPendingToolCalls (clamped to 0..=100000).
    #[serde(default = "defaults::max_queued_tool_calls")]
    #[schemars(range(min = 0))]
    max_queued_tool_calls: u64,
    /// Entries of a session's `results` store (clamped to 1..=1024).
    #[serde(default = "defaults::max_saved_results")]
    #[schemars(range(min = 1))]
    max_saved_results: u64,
    /// JSON bytes of a session's `results` store (clamped to 1024..=256 MiB).
    #[serde(default = "defaults::max_saved_result_bytes")]
    #[schemars(range(min = 1))]
    max_saved_result_bytes: u64,
    /// Parked run lifetime in seconds (clamped to 1..=86400).
    #[serde(default = "defaults::snapshot_ttl_seconds")]
    #[schemars(range(min = 1))]
    snapshot_ttl_seconds: u64,
    /// Longest idle of one wait call on pending host work in ms (clamped to 1000..=600000).
    #[serde(default = "defaults::max_wait_ms")]
    #[schemars(range(min = 1))]
    max_wait_ms: u64,
    /// Longest a nested call may stay unsettled in ms before it is cancelled and rejects in the
    /// guest (clamped to 1000..=86400000).
    #[serde(default = "defaults::tool_call_timeout_ms")]
    #[schemars(range(min = 1))]
    tool_call_timeout_ms: u64,
    /// Longest life of a run in seconds, from its first exec, parked or not (clamped to
    /// 1..=604800).
    #[serde(default = "defaults::max_run_seconds")]
    #[schemars(range(min = 1))]
    max_run_seconds: u64,
    /// Default tools.search limit (clamped to 1..=maxSearchLimit).
    #[serde(default = "defaults::search_default_limit")]
    #[schemars(range(min = 1))]
    search_default_limit: u64,
    /// Largest tools.search limit (clamped to 1..=50).
    #[serde(default = "defaults::max_search_limit")]
    #[schemars(range(min = 1))]
    max_search_limit: u64,
    /// Accepted cell languages, a non-empty subset (duplicates are ignored).
    #[serde(default = "defaults::languages")]
    #[schemars(length(min = 1))]
    languages: Vec<Language>,
    /// Where each run's VM lives: "thread" (in this process) or "process" (a worker process).
    #[serde(default)]
    isolation: IsolationWire,
}

/// [`IsolationMode`] in the schema: a plain string enumeration (documented variants would make
/// schemars write a `oneOf`).
#[derive(JsonSchema, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
enum IsolationWire {
    #[default]
    Thread,
    Process,
}

/// The schema's `default`s: [`CodeModeConfig::default`]'s values, so they cannot drift.
mod defaults {
    use super::{CodeModeConfig, Language};

    pub(super) fn timeout_ms() -> u64 {
        CodeModeConfig::default().timeout_ms
    }
    pub(super) fn memory_limit_bytes() -> u64 {
        CodeModeConfig::default().memory_limit_bytes
    }
    pub(super) fn max_output_bytes() -> u64 {
        CodeModeConfig::default().max_output_bytes
    }
    pub(super) fn max_snapshot_bytes() -> u64 {
        CodeModeConfig::default().max_snapshot_bytes
    }
    pub(super) fn max_pending_tool_calls() -> u64 {
        CodeModeConfig::default().max_pending_tool_calls
    }
    pub(super) fn max_queued_tool_calls() -> u64 {
        CodeModeConfig::default().max_queued_tool_calls
    }
    pub(super) fn max_saved_results() -> u64 {
        CodeModeConfig::default().max_saved_results
    }
    pub(super) fn max_saved_result_bytes() -> u64 {
        CodeModeConfig::default().max_saved_result_bytes
    }
    pub(super) fn snapshot_ttl_seconds() -> u64 {
        CodeModeConfig::default().snapshot_ttl_seconds
    }
    pub(super) fn max_wait_ms() -> u64 {
        CodeModeConfig::default().max_wait_ms
    }
    pub(super) fn tool_call_timeout_ms() -> u64 {
        CodeModeConfig::default().tool_call_timeout_ms
    }
    pub(super) fn max_run_seconds() -> u64 {
        CodeModeConfig::default().max_run_seconds
    }
    pub(super) fn search_default_limit() -> u64 {
        CodeModeConfig::default().search_default_limit
    }
    pub(super) fn max_search_limit() -> u64 {
        CodeModeConfig::default().max_search_limit
    }
    pub(super) fn languages() -> Vec<Language> {
        CodeModeConfig::default().languages
    }
}
