//! The one config contract: `tools.codeMode` (SPEC §3).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Language;

/// Default `timeoutMs`: the wall-clock budget of one `exec` or `wait` call.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Default `memoryLimitBytes` of the guest VM (64 MiB).
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// Default `maxOutputBytes`: output items plus the final value, as UTF-8 JSON bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 64 * 1024;
/// Default `maxSnapshotBytes`: measured VM memory of a parked run (10 MiB).
pub const DEFAULT_MAX_SNAPSHOT_BYTES: u64 = 10 * 1024 * 1024;
/// Default `maxPendingToolCalls`: nested calls in flight at once per run.
pub const DEFAULT_MAX_PENDING_TOOL_CALLS: u64 = 16;
/// Default `maxQueuedToolCalls`: nested calls that wait, in FIFO order, while
/// `maxPendingToolCalls` are in flight.
pub const DEFAULT_MAX_QUEUED_TOOL_CALLS: u64 = codemode_sandbox::DEFAULT_MAX_QUEUED_CALLS as u64;
/// Default `snapshotTtlSeconds`: how long a parked run waits for `wait`.
pub const DEFAULT_SNAPSHOT_TTL_SECONDS: u64 = 900;
/// Default `maxWaitMs`: the longest a `wait` call idles while the guest is blocked on pending
/// host work and produces nothing new.
pub const DEFAULT_MAX_WAIT_MS: u64 = 60_000;
/// Default `searchDefaultLimit`: results of `tools.search` without a limit.
pub const DEFAULT_SEARCH_DEFAULT_LIMIT: u64 = 8;
/// Default `maxSearchLimit`: the most results `tools.search` returns.
pub const DEFAULT_MAX_SEARCH_LIMIT: u64 = 50;

const MIB: u64 = 1024 * 1024;

/// One integer field of the config: wire name, clamp range and where it lives.
struct Field {
    name: &'static str,
    min: u64,
    max: u64,
    slot: fn(&mut CodeModeConfig) -> &mut u64,
}

/// Every integer field. `searchDefaultLimit` is clamped again to `maxSearchLimit` after parsing.
const INTEGER_FIELDS: [Field; 10] = [
    Field {
        name: "timeoutMs",
        min: 100,
        max: 60_000,
        slot: |c| &mut c.timeout_ms,
    },
    Field {
        name: "memoryLimitBytes",
        min: MIB,
        max: 1024 * MIB,
        slot: |c| &mut c.memory_limit_bytes,
    },
    Field {
        name: "maxOutputBytes",
        min: 1024,
        max: 10 * MIB,
        slot: |c| &mut c.max_output_bytes,
    },
    Field {
        name: "maxSnapshotBytes",
        min: 1024,
        max: 256 * MIB,
        slot: |c| &mut c.max_snapshot_bytes,
    },
    Field {
        name: "maxPendingToolCalls",
        min: 1,
        max: 128,
        slot: |c| &mut c.max_pending_tool_calls,
    },
    Field {
        name: "maxQueuedToolCalls",
        min: 0,
        max: 100_000,
        slot: |c| &mut c.max_queued_tool_calls,
    },
    Field {
        name: "snapshotTtlSeconds",
        min: 1,
        max: 86_400,
        slot: |c| &mut c.snapshot_ttl_seconds,
    },
    Field {
        name: "maxWaitMs",
        min: 1_000,
        max: 600_000,
        slot: |c| &mut c.max_wait_ms,
    },
    Field {
        name: "searchDefaultLimit",
        min: 1,
        max: 50,
        slot: |c| &mut c.search_default_limit,
    },
    Field {
        name: "maxSearchLimit",
        min: 1,
        max: 50,
        slot: |c| &mut c.max_search_limit,
    },
];

/// A `tools.codeMode` value that could not be accepted. Nothing is silently defaulted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The value is neither `true`, `false` nor an object.
    #[error("tools.codeMode must be true, false or an object.")]
    NotBoolOrObject,
    /// An object key that the contract does not know.
    #[error("tools.codeMode has an unknown key `{0}`.")]
    UnknownKey(String),
    /// `enabled` is not a boolean.
    #[error("tools.codeMode.enabled must be a boolean.")]
    EnabledNotBool,
    /// A numeric field is not a positive integer.
    #[error("tools.codeMode.{0} must be a positive integer.")]
    NotPositiveInteger(&'static str),
    /// A numeric field that may be zero is not a non-negative integer.
    #[error("tools.codeMode.{0} must be a non-negative integer.")]
    NotNonNegativeInteger(&'static str),
    /// `languages` is not an array of the two language names.
    #[error(
        "tools.codeMode.languages must be a non-empty array of \"javascript\" and \"typescript\"."
    )]
    InvalidLanguages,
}

/// The effective code-mode configuration: parsed, validated and clamped.
///
/// ```
/// use codemode_core::CodeModeConfig;
/// let config = CodeModeConfig::from_json(&serde_json::json!({ "enabled": true, "timeoutMs": 5 })).unwrap();
/// assert!(config.enabled);
/// assert_eq!(config.timeout_ms, 100); // clamped into 100..=60000
/// assert!(!CodeModeConfig::from_json(&serde_json::json!({ "timeoutMs": 500 })).unwrap().enabled);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeModeConfig {
    /// Whether code mode is on. Only `true` or `{ "enabled": true }` turns it on.
    pub enabled: bool,
    /// Wall-clock budget of each `exec` / `wait` call, in milliseconds.
    pub timeout_ms: u64,
    /// Memory limit of the guest VM, in bytes.
    pub memory_limit_bytes: u64,
    /// Limit on output items plus the final value, as UTF-8 JSON bytes.
    pub max_output_bytes: u64,
    /// Limit on a parked run's measured VM memory, in bytes.
    pub max_snapshot_bytes: u64,
    /// Nested calls in flight at once per run.
    pub max_pending_tool_calls: u64,
    /// Further nested calls that wait in a FIFO queue while `max_pending_tool_calls` are in
    /// flight; the call after that is refused with "too many pending code mode tool calls".
    pub max_queued_tool_calls: u64,
    /// Time a parked run waits for `wait`, in seconds.
    pub snapshot_ttl_seconds: u64,
    /// The longest a `wait` call idles, in milliseconds, while the guest is blocked on pending
    /// host work and produces no output; guest code still runs at most `timeout_ms` at a time.
    pub max_wait_ms: u64,
    /// Results of `tools.search` without a limit (at most `max_search_limit`).
    pub search_default_limit: u64,
    /// The most results `tools.search` returns.
    pub max_search_limit: u64,
    /// The accepted cell languages.
    pub languages: Vec<Language>,
}

impl Default for CodeModeConfig {
    fn default() -> Self {
        CodeModeConfig {
            enabled: false,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT_BYTES,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            max_pending_tool_calls: DEFAULT_MAX_PENDING_TOOL_CALLS,
            max_queued_tool_calls: DEFAULT_MAX_QUEUED_TOOL_CALLS,
            snapshot_ttl_seconds: DEFAULT_SNAPSHOT_TTL_SECONDS,
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            search_default_limit: DEFAULT_SEARCH_DEFAULT_LIMIT,
            max_search_limit: DEFAULT_MAX_SEARCH_LIMIT,
            languages: vec![Language::Javascript, Language::Typescript],
        }
    }
}

impl CodeModeConfig {
    /// The default config with code mode switched on.
    pub fn enabled() -> Self {
        CodeModeConfig {
            enabled: true,
            ..CodeModeConfig::default()
        }
    }

    /// Parses the `tools.codeMode` value. A missing value (`Value::Null`) means disabled.
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        let object = match value {
            Value::Null | Value::Bool(false) => return Ok(CodeModeConfig::default()),
            Value::Bool(true) => return Ok(CodeModeConfig::enabled()),
            Value::Object(object) => object,
            _ => return Err(ConfigError::NotBoolOrObject),
        };
        let mut config = CodeModeConfig::default();
        for (key, field_value) in object {
            match key.as_str() {
                "enabled" => {
                    config.enabled = field_value.as_bool().ok_or(ConfigError::EnabledNotBool)?;
                }
                "languages" => config.languages = parse_languages(field_value)?,
                other => {
                    let field = INTEGER_FIELDS
                        .iter()
                        .find(|field| field.name == other)
                        .ok_or_else(|| ConfigError::UnknownKey(other.to_owned()))?;
                    let given = field_value
                        .as_u64()
                        .filter(|n| *n > 0 || field.min == 0)
                        .ok_or(if field.min == 0 {
                            ConfigError::NotNonNegativeInteger(field.name)
                        } else {
                            ConfigError::NotPositiveInteger(field.name)
                        })?;
                    *(field.slot)(&mut config) = given.clamp(field.min, field.max);
                }
            }
        }
        config.search_default_limit = config.search_default_limit.min(config.max_search_limit);
        Ok(config)
    }

    /// The wall-clock budget of one `exec` / `wait` call.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The longest a `wait` call idles on pending host work.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }

    /// Whether cells in `language` are accepted.
    pub fn allows(&self, language: Language) -> bool {
        self.languages.contains(&language)
    }

    /// The JSON Schema of `tools.codeMode` (generated with schemars).
    pub fn json_schema() -> Value {
        serde_json::to_value(schemars::schema_for!(CodeModeConfigWire)).unwrap_or(Value::Null)
    }
}

fn parse_languages(value: &Value) -> Result<Vec<Language>, ConfigError> {
    let items = value.as_array().ok_or(ConfigError::InvalidLanguages)?;
    let mut languages = Vec::new();
    for item in items {
        let language = item
            .as_str()
            .and_then(Language::parse)
            .ok_or(ConfigError::InvalidLanguages)?;
        if !languages.contains(&language) {
            languages.push(language);
        }
    }
    if languages.is_empty() {
        return Err(ConfigError::InvalidLanguages);
    }
    Ok(languages)
}

/// Code mode: `true`, `false`, or an object whose `enabled: true` turns it on.
#[derive(JsonSchema, Deserialize)]
#[serde(untagged)]
#[schemars(title = "tools.codeMode")]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
enum CodeModeConfigWire {
    /// `true` enables code mode with the defaults; `false` disables it.
    Toggle(bool),
    /// Explicit settings; code mode stays off unless `enabled` is `true`.
    Settings(CodeModeSettings),
}

#[derive(JsonSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
struct CodeModeSettings {
    /// The activation switch; other fields never enable code mode.
    enabled: Option<bool>,
    /// Wall-clock budget of each exec/wait call in ms (clamped to 100..=60000; default 10000).
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
    /// Guest VM memory limit in bytes (clamped to 1 MiB..=1 GiB; default 64 MiB).
    #[schemars(range(min = 1))]
    memory_limit_bytes: Option<u64>,
    /// Output plus final value limit in UTF-8 JSON bytes (clamped to 1024..=10 MiB; default 65536).
    #[schemars(range(min = 1))]
    max_output_bytes: Option<u64>,
    /// Parked run memory limit in bytes (clamped to 1024..=256 MiB; default 10 MiB).
    #[schemars(range(min = 1))]
    max_snapshot_bytes: Option<u64>,
    /// Nested calls in flight per run (clamped to 1..=128; default 16).
    #[schemars(range(min = 1))]
    max_pending_tool_calls: Option<u64>,
    /// Nested calls waiting in FIFO order behind maxPendingToolCalls (clamped to 0..=100000;
    /// default 1024).
    #[schemars(range(min = 0))]
    max_queued_tool_calls: Option<u64>,
    /// Parked run lifetime in seconds (clamped to 1..=86400; default 900).
    #[schemars(range(min = 1))]
    snapshot_ttl_seconds: Option<u64>,
    /// Longest idle of one wait call on pending host work in ms (clamped to 1000..=600000;
    /// default 60000).
    #[schemars(range(min = 1))]
    max_wait_ms: Option<u64>,
    /// Default tools.search limit (clamped to 1..=maxSearchLimit; default 8).
    #[schemars(range(min = 1))]
    search_default_limit: Option<u64>,
    /// Largest tools.search limit (clamped to 1..=50; default 50).
    #[schemars(range(min = 1))]
    max_search_limit: Option<u64>,
    /// Accepted cell languages (default both).
    languages: Option<Vec<Language>>,
}
