//! The one config contract of code mode: `tools.codeMode`, parsed from JSON
//! ([`CodeModeConfig::from_json`]) or built in Rust ([`CodeModeConfigBuilder`]), both through the
//! same checks and clamps ([`CodeModeConfig::clamp_range`]), and its JSON Schema
//! ([`CodeModeConfig::json_schema`], published as `docs/config.schema.json`).
//!
//! This crate knows nothing of running code: not the sandbox (QuickJS, its VM threads or worker
//! processes), catalogs, tools, sessions or journals. It depends on no other crate of ours.
//! `codemode-core` re-exports everything here at its root (`codemode_core::CodeModeConfig`) and
//! turns a config into the sandbox's limits; it also checks, when it compiles, that the
//! defaults here of the limits the sandbox enforces are the sandbox's own defaults.
//! No feature flags.
//!
//! ```
//! use codemode_config::{CodeModeConfig, Language};
//! let config = CodeModeConfig::from_json(&serde_json::json!({ "enabled": true })).unwrap();
//! assert!(config.is_enabled() && config.allows(Language::Typescript));
//! ```
#![forbid(unsafe_code)]

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod language;
mod schema;

pub use language::Language;

// The defaults of the limits the sandbox enforces equal the sandbox's constants (64 MiB, 64 KiB,
// 10 MiB, 16, 1024): codemode-core fails to compile if one of them drifts.

/// Default `timeoutMs`: the wall-clock budget of one `exec` or `wait` call (10 s). Not a sandbox
/// limit: it makes the deadline each leg is driven to.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Default `memoryLimitBytes` of the guest VM (64 MiB).
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 64 * MIB;
/// Default `maxOutputBytes`: output items plus the final value, as UTF-8 JSON bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 65_536;
/// Default `maxSnapshotBytes`: measured VM memory of a parked run (10 MiB).
pub const DEFAULT_MAX_SNAPSHOT_BYTES: u64 = 10 * MIB;
/// Default `maxPendingToolCalls`: nested calls in flight at once per run.
pub const DEFAULT_MAX_PENDING_TOOL_CALLS: u64 = 16;
/// Default `maxQueuedToolCalls`: nested calls that wait, in FIFO order, while
/// `maxPendingToolCalls` are in flight.
pub const DEFAULT_MAX_QUEUED_TOOL_CALLS: u64 = 1024;
/// Default `maxSavedResults`: entries of a session's `results` store.
pub const DEFAULT_MAX_SAVED_RESULTS: u64 = 64;
/// Default `maxSavedResultBytes`: JSON bytes of all entries of a session's `results` store.
pub const DEFAULT_MAX_SAVED_RESULT_BYTES: u64 = 10 * 1024 * 1024;
/// Default `snapshotTtlSeconds`: how long a parked run waits for `wait`.
pub const DEFAULT_SNAPSHOT_TTL_SECONDS: u64 = 900;
/// Default `maxWaitMs`: the longest a `wait` call idles while the guest is blocked on pending
/// host work and produces nothing new.
pub const DEFAULT_MAX_WAIT_MS: u64 = 60_000;
/// Default `toolCallTimeoutMs`: how long one nested call may stay unsettled (5 minutes). Long
/// enough for the slow tools a program legitimately awaits (a build, a crawl, a large MCP call,
/// an approval answered in the same sitting), short enough that a tool that never answers
/// cannot hold a run, its VM and its parked slot for the rest of `maxRunSeconds`. A host whose
/// approvals take hours raises it.
pub const DEFAULT_TOOL_CALL_TIMEOUT_MS: u64 = 300_000;
/// Default `maxRunSeconds`: the longest a run lives, counted from its first `exec`, however
/// many times it parks, yields or is resumed (one hour). Every `wait` resets the parked TTL, so
/// without this bound a run that keeps yielding, or waits on an endless chain of approvals,
/// would never end.
pub const DEFAULT_MAX_RUN_SECONDS: u64 = 3_600;
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

impl Field {
    /// The error for a value that is not an integer of this field's kind.
    fn refusal(&self) -> ConfigError {
        if self.min == 0 {
            ConfigError::NotNonNegativeInteger(self.name)
        } else {
            ConfigError::NotPositiveInteger(self.name)
        }
    }

    /// The one place a value is checked and clamped, for JSON and the builder alike: zero is
    /// refused unless the range starts at zero, anything else is clamped into the range.
    fn set(&self, config: &mut CodeModeConfig, given: u64) -> Result<(), ConfigError> {
        if given == 0 && self.min > 0 {
            return Err(self.refusal());
        }
        *(self.slot)(config) = given.clamp(self.min, self.max);
        Ok(())
    }
}

/// Every integer field. `searchDefaultLimit` is clamped again to `maxSearchLimit` after parsing.
const INTEGER_FIELDS: [Field; 14] = [
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
        name: "maxSavedResults",
        min: 1,
        max: 1024,
        slot: |c| &mut c.max_saved_results,
    },
    Field {
        name: "maxSavedResultBytes",
        min: 1024,
        max: 256 * MIB,
        slot: |c| &mut c.max_saved_result_bytes,
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
        name: "toolCallTimeoutMs",
        min: 1_000,
        max: 86_400_000,
        slot: |c| &mut c.tool_call_timeout_ms,
    },
    Field {
        name: "maxRunSeconds",
        min: 1,
        max: 604_800,
        slot: |c| &mut c.max_run_seconds,
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
    /// A numeric field is not a positive integer (`null`, a string, a fraction, zero or a
    /// negative number; an integral float such as `5.0` or `1e3` is an integer).
    #[error("tools.codeMode.{0} must be a positive integer.")]
    NotPositiveInteger(&'static str),
    /// A numeric field that may be zero is not a non-negative integer.
    #[error("tools.codeMode.{0} must be a non-negative integer.")]
    NotNonNegativeInteger(&'static str),
    /// `isolation` is not `"thread"` or `"process"`.
    #[error("tools.codeMode.isolation must be \"thread\" or \"process\".")]
    InvalidIsolation,
    /// `languages` is not an array of the two language names.
    #[error(
        "tools.codeMode.languages must be a non-empty array of \"javascript\" and \"typescript\"."
    )]
    InvalidLanguages,
}

/// The effective code-mode configuration: parsed, validated and clamped.
///
/// The fields are private, so every config went through the checks of
/// [`CodeModeConfig::from_json`] or [`CodeModeConfigBuilder::build`]: a `timeoutMs` of 0, which
/// would make every `exec` a timeout, cannot be written. Read the values with the getters.
///
/// ```
/// use std::time::Duration;
/// use codemode_config::CodeModeConfig;
/// let config = CodeModeConfig::from_json(&serde_json::json!({ "enabled": true, "timeoutMs": 5 })).unwrap();
/// assert!(config.is_enabled());
/// assert_eq!(config.timeout_ms(), 100); // clamped into 100..=60000
/// assert!(!CodeModeConfig::from_json(&serde_json::json!({ "timeoutMs": 500 })).unwrap().is_enabled());
///
/// // The same clamps from Rust.
/// let built = CodeModeConfig::enabled().timeout(Duration::from_millis(5)).build().unwrap();
/// assert_eq!(built, config);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeModeConfig {
    /// Whether code mode is on. Only `true` or `{ "enabled": true }` turns it on.
    enabled: bool,
    /// Wall-clock budget of each `exec` / `wait` call, in milliseconds.
    timeout_ms: u64,
    /// Memory limit of the guest VM, in bytes.
    memory_limit_bytes: u64,
    /// Limit on output items plus the final value, as UTF-8 JSON bytes.
    max_output_bytes: u64,
    /// Limit on a parked run's measured VM memory, in bytes.
    max_snapshot_bytes: u64,
    /// Nested calls in flight at once per run.
    max_pending_tool_calls: u64,
    /// Further nested calls that wait in a FIFO queue while `max_pending_tool_calls` are in
    /// flight.
    max_queued_tool_calls: u64,
    /// Entries a session's `results` store holds.
    max_saved_results: u64,
    /// JSON bytes all entries of a session's `results` store hold together.
    max_saved_result_bytes: u64,
    /// Time a parked run waits for `wait`, in seconds.
    snapshot_ttl_seconds: u64,
    /// The longest a `wait` call idles, in milliseconds.
    max_wait_ms: u64,
    /// The longest one nested call may stay unsettled, in milliseconds.
    tool_call_timeout_ms: u64,
    /// The longest a run lives from its first `exec`, in seconds.
    max_run_seconds: u64,
    /// Results of `tools.search` without a limit (at most `max_search_limit`).
    search_default_limit: u64,
    /// The most results `tools.search` returns.
    max_search_limit: u64,
    /// The accepted cell languages.
    languages: Vec<Language>,
    /// Where each run's VM lives: a VM thread of this process, or a worker process.
    isolation: IsolationMode,
}

/// `tools.codeMode.isolation`: where the VM of each run lives.
///
/// `"thread"` (the default) runs VMs on the sandbox's VM threads in this process, the fast path.
/// `"process"` runs each VM in a worker process (`codemode-worker`, or `codemode worker`) of a
/// pool the host's `CodeMode` (codemode-core) owns: an engine bug or a native call that never
/// returns is then contained in a process the host kills at the deadline plus the grace, and on
/// Linux the worker runs under a system-call filter. docs/security.md says what each adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationMode {
    /// VMs on VM threads of this process.
    #[default]
    Thread,
    /// Each VM in a worker process.
    Process,
}

impl IsolationMode {
    /// Parses the exact wire name.
    pub fn parse(name: &str) -> Option<IsolationMode> {
        match name {
            "thread" => Some(IsolationMode::Thread),
            "process" => Some(IsolationMode::Process),
            _ => None,
        }
    }
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
            max_saved_results: DEFAULT_MAX_SAVED_RESULTS,
            max_saved_result_bytes: DEFAULT_MAX_SAVED_RESULT_BYTES,
            snapshot_ttl_seconds: DEFAULT_SNAPSHOT_TTL_SECONDS,
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            tool_call_timeout_ms: DEFAULT_TOOL_CALL_TIMEOUT_MS,
            max_run_seconds: DEFAULT_MAX_RUN_SECONDS,
            search_default_limit: DEFAULT_SEARCH_DEFAULT_LIMIT,
            max_search_limit: DEFAULT_MAX_SEARCH_LIMIT,
            languages: vec![Language::Javascript, Language::Typescript],
            isolation: IsolationMode::Thread,
        }
    }
}

impl CodeModeConfig {
    /// The range an integer field of `tools.codeMode` (its wire name, `timeoutMs`) is clamped
    /// into, or `None` for a name that is not one. `searchDefaultLimit` is clamped again to the
    /// config's `maxSearchLimit`.
    ///
    /// ```
    /// use codemode_config::CodeModeConfig;
    /// assert_eq!(CodeModeConfig::clamp_range("timeoutMs"), Some(100..=60_000));
    /// assert_eq!(CodeModeConfig::clamp_range("enabled"), None);
    /// ```
    pub fn clamp_range(field: &str) -> Option<std::ops::RangeInclusive<u64>> {
        INTEGER_FIELDS
            .iter()
            .find(|known| known.name == field)
            .map(|known| known.min..=known.max)
    }

    /// A builder of a config with code mode switched on, starting from the defaults. Without
    /// further settings, `CodeModeConfig::enabled().build()` cannot fail.
    pub fn enabled() -> CodeModeConfigBuilder {
        CodeModeConfigBuilder {
            config: CodeModeConfig {
                enabled: true,
                ..CodeModeConfig::default()
            },
            error: None,
        }
    }

    /// A builder starting from the defaults with code mode off (switch it on with
    /// [`CodeModeConfigBuilder::enable`]).
    pub fn builder() -> CodeModeConfigBuilder {
        CodeModeConfigBuilder {
            config: CodeModeConfig::default(),
            error: None,
        }
    }

    /// Parses the `tools.codeMode` value. A missing value (`Value::Null`) means disabled.
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        let object = match value {
            Value::Null | Value::Bool(false) => return Ok(CodeModeConfig::default()),
            Value::Bool(true) => return CodeModeConfig::enabled().build(),
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
                "isolation" => {
                    config.isolation = field_value
                        .as_str()
                        .and_then(IsolationMode::parse)
                        .ok_or(ConfigError::InvalidIsolation)?;
                }
                other => {
                    let field = INTEGER_FIELDS
                        .iter()
                        .find(|field| field.name == other)
                        .ok_or_else(|| ConfigError::UnknownKey(other.to_owned()))?;
                    let given = integer(field_value).ok_or(field.refusal())?;
                    field.set(&mut config, given)?;
                }
            }
        }
        Ok(config.finish())
    }

    /// The cross-field clamp both entry points end with: `searchDefaultLimit` is at most
    /// `maxSearchLimit`.
    fn finish(mut self) -> Self {
        self.search_default_limit = self.search_default_limit.min(self.max_search_limit);
        self
    }

    /// Whether code mode is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The wall-clock budget of one `exec` / `wait` call.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// `timeoutMs`: the wall-clock budget of one `exec` / `wait` call, in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// `memoryLimitBytes`: the guest VM's heap limit.
    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_bytes
    }

    /// `maxOutputBytes`: output items plus the final value, as UTF-8 JSON bytes.
    pub fn max_output_bytes(&self) -> u64 {
        self.max_output_bytes
    }

    /// `maxSnapshotBytes`: the measured VM memory a parked run may keep.
    pub fn max_snapshot_bytes(&self) -> u64 {
        self.max_snapshot_bytes
    }

    /// `maxPendingToolCalls`: nested calls in flight at once per run.
    pub fn max_pending_tool_calls(&self) -> u64 {
        self.max_pending_tool_calls
    }

    /// `maxQueuedToolCalls`: further nested calls that wait, in FIFO order, while
    /// `maxPendingToolCalls` are in flight; the call after that is refused with "too many
    /// pending code mode tool calls".
    pub fn max_queued_tool_calls(&self) -> u64 {
        self.max_queued_tool_calls
    }

    /// `maxSavedResults`: entries a session's `results` store holds.
    pub fn max_saved_results(&self) -> u64 {
        self.max_saved_results
    }

    /// `maxSavedResultBytes`: JSON bytes all entries of a session's `results` store hold.
    pub fn max_saved_result_bytes(&self) -> u64 {
        self.max_saved_result_bytes
    }

    /// How long a parked run waits for `wait`.
    pub fn snapshot_ttl(&self) -> Duration {
        Duration::from_secs(self.snapshot_ttl_seconds)
    }

    /// `snapshotTtlSeconds`: how long a parked run waits for `wait`, in seconds.
    pub fn snapshot_ttl_seconds(&self) -> u64 {
        self.snapshot_ttl_seconds
    }

    /// The longest a `wait` call idles on pending host work.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }

    /// `maxWaitMs`: the longest a `wait` call idles, in milliseconds, while the guest is
    /// blocked on pending host work and produces no output; guest code still runs at most
    /// `timeoutMs` at a time.
    pub fn max_wait_ms(&self) -> u64 {
        self.max_wait_ms
    }

    /// The longest one nested call may stay unsettled: then it is cancelled at the host and
    /// rejects in the guest with a catchable error naming the tool and the limit.
    pub fn tool_call_timeout(&self) -> Duration {
        Duration::from_millis(self.tool_call_timeout_ms)
    }

    /// `toolCallTimeoutMs`: [`tool_call_timeout`](Self::tool_call_timeout) in milliseconds,
    /// counted from when the host's executor gets the call (a call queued behind
    /// `maxPendingToolCalls` has not started).
    pub fn tool_call_timeout_ms(&self) -> u64 {
        self.tool_call_timeout_ms
    }

    /// The longest a run lives, from its first `exec` to its end, parked or not.
    pub fn max_run(&self) -> Duration {
        Duration::from_secs(self.max_run_seconds)
    }

    /// `maxRunSeconds`: [`max_run`](Self::max_run) in seconds. A run past it fails with
    /// `run_lifetime_exceeded`: during a leg at once, parked when its life ends (it is dropped
    /// then, and the next `wait` says so).
    pub fn max_run_seconds(&self) -> u64 {
        self.max_run_seconds
    }

    /// `searchDefaultLimit`: results of `tools.search` without a limit.
    pub fn search_default_limit(&self) -> u64 {
        self.search_default_limit
    }

    /// `maxSearchLimit`: the most results `tools.search` returns.
    pub fn max_search_limit(&self) -> u64 {
        self.max_search_limit
    }

    /// The accepted cell languages.
    pub fn languages(&self) -> &[Language] {
        &self.languages
    }

    /// Where each run's VM lives (`isolation`).
    pub fn isolation(&self) -> IsolationMode {
        self.isolation
    }

    /// The same config with its VMs in `isolation` (a command-line override, say; no other
    /// field depends on it).
    #[must_use]
    pub fn with_isolation(mut self, isolation: IsolationMode) -> Self {
        self.isolation = isolation;
        self
    }

    /// Whether cells in `language` are accepted.
    pub fn allows(&self, language: Language) -> bool {
        self.languages.contains(&language)
    }

    /// The JSON Schema of `tools.codeMode` (generated with schemars), published as
    /// `docs/config.schema.json`. Fields are optional, never `null`; integer fields are JSON
    /// Schema `integer`s, which, like [`CodeModeConfig::from_json`], accept `5.0` and `1e3`.
    pub fn json_schema() -> Value {
        serde_json::to_value(schemars::schema_for!(schema::CodeModeConfigWire))
            .unwrap_or(Value::Null)
    }
}

/// Builds a [`CodeModeConfig`] in Rust, with the checks and clamps of
/// [`CodeModeConfig::from_json`] (the same table of fields, ranges and messages): a value
/// beyond its range is clamped into it, and a zero where the JSON contract wants a positive
/// integer, or an empty language list, makes [`build`](Self::build) fail with the
/// [`ConfigError`] that JSON would give. Durations are taken in the unit of their key
/// (milliseconds, or whole seconds for the snapshot TTL, rounded up).
///
/// ```
/// use std::time::Duration;
/// use codemode_config::{CodeModeConfig, ConfigError, Language};
/// let config = CodeModeConfig::enabled()
///     .timeout(Duration::from_secs(120)) // clamped to 60 s
///     .max_pending_tool_calls(4)
///     .languages([Language::Javascript])
///     .build()?;
/// assert_eq!(config.timeout_ms(), 60_000);
/// assert!(!config.allows(Language::Typescript));
///
/// let zero = CodeModeConfig::enabled().timeout(Duration::ZERO).build();
/// assert_eq!(zero, Err(ConfigError::NotPositiveInteger("timeoutMs")));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a config builder does nothing until `build` is called"]
pub struct CodeModeConfigBuilder {
    config: CodeModeConfig,
    /// The first refused value; [`CodeModeConfigBuilder::build`] returns it.
    error: Option<ConfigError>,
}

impl CodeModeConfigBuilder {
    /// Sets one integer field through the shared table, keeping the first error.
    fn integer(mut self, key: &'static str, value: u64) -> Self {
        if self.error.is_none()
            && let Some(field) = INTEGER_FIELDS.iter().find(|field| field.name == key)
            && let Err(error) = field.set(&mut self.config, value)
        {
            self.error = Some(error);
        }
        self
    }

    /// Switches code mode on or off.
    pub fn enable(mut self, enabled: bool) -> Self {
        self.config.enabled = enabled;
        self
    }

    /// `timeoutMs`: the wall-clock budget of one `exec` / `wait` call (100 ms..=60 s).
    pub fn timeout(self, timeout: Duration) -> Self {
        self.integer("timeoutMs", millis(timeout))
    }

    /// `memoryLimitBytes`: the guest VM's heap (1 MiB..=1 GiB).
    pub fn memory_limit_bytes(self, bytes: u64) -> Self {
        self.integer("memoryLimitBytes", bytes)
    }

    /// `maxOutputBytes`: output items plus the final value (1024..=10 MiB).
    pub fn max_output_bytes(self, bytes: u64) -> Self {
        self.integer("maxOutputBytes", bytes)
    }

    /// `maxSnapshotBytes`: measured size of a parked run (1024..=256 MiB).
    pub fn max_snapshot_bytes(self, bytes: u64) -> Self {
        self.integer("maxSnapshotBytes", bytes)
    }

    /// `maxPendingToolCalls`: nested calls in flight at once (1..=128).
    pub fn max_pending_tool_calls(self, calls: u64) -> Self {
        self.integer("maxPendingToolCalls", calls)
    }

    /// `maxQueuedToolCalls`: further calls waiting their turn (0..=100000).
    pub fn max_queued_tool_calls(self, calls: u64) -> Self {
        self.integer("maxQueuedToolCalls", calls)
    }

    /// `maxSavedResults`: entries of a session's `results` store (1..=1024).
    pub fn max_saved_results(self, entries: u64) -> Self {
        self.integer("maxSavedResults", entries)
    }

    /// `maxSavedResultBytes`: JSON bytes of a session's `results` store (1024..=256 MiB).
    pub fn max_saved_result_bytes(self, bytes: u64) -> Self {
        self.integer("maxSavedResultBytes", bytes)
    }

    /// `snapshotTtlSeconds`: how long a parked run waits for `wait` (1 s..=1 day; a fraction
    /// of a second rounds up).
    pub fn snapshot_ttl(self, ttl: Duration) -> Self {
        let seconds = ttl
            .as_secs()
            .saturating_add(u64::from(ttl.subsec_nanos() > 0));
        self.integer("snapshotTtlSeconds", seconds)
    }

    /// `maxWaitMs`: the longest one `wait` idles on pending host work (1 s..=10 min).
    pub fn max_wait(self, max_wait: Duration) -> Self {
        self.integer("maxWaitMs", millis(max_wait))
    }

    /// `toolCallTimeoutMs`: the longest one nested call may stay unsettled (1 s..=1 day).
    pub fn tool_call_timeout(self, timeout: Duration) -> Self {
        self.integer("toolCallTimeoutMs", millis(timeout))
    }

    /// `maxRunSeconds`: the longest a run lives from its first `exec` (1 s..=7 days; a
    /// fraction of a second rounds up).
    pub fn max_run(self, max_run: Duration) -> Self {
        let seconds = max_run
            .as_secs()
            .saturating_add(u64::from(max_run.subsec_nanos() > 0));
        self.integer("maxRunSeconds", seconds)
    }

    /// `searchDefaultLimit`: results of `tools.search` without a limit (1..=`maxSearchLimit`).
    pub fn search_default_limit(self, limit: u64) -> Self {
        self.integer("searchDefaultLimit", limit)
    }

    /// `maxSearchLimit`: the most results `tools.search` returns (1..=50).
    pub fn max_search_limit(self, limit: u64) -> Self {
        self.integer("maxSearchLimit", limit)
    }

    /// `languages`: the accepted cell languages, a non-empty set (duplicates are ignored).
    pub fn languages(mut self, languages: impl IntoIterator<Item = Language>) -> Self {
        let mut accepted = Vec::new();
        for language in languages {
            if !accepted.contains(&language) {
                accepted.push(language);
            }
        }
        if accepted.is_empty() {
            self.error.get_or_insert(ConfigError::InvalidLanguages);
        } else {
            self.config.languages = accepted;
        }
        self
    }

    /// Where each run's VM lives (`isolation`; default [`IsolationMode::Thread`]).
    pub fn isolation(mut self, isolation: IsolationMode) -> Self {
        self.config.isolation = isolation;
        self
    }

    /// The config, or the first value that was refused.
    pub fn build(self) -> Result<CodeModeConfig, ConfigError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.config.finish()),
        }
    }
}

/// A duration in whole milliseconds, saturating (every field is clamped far below `u64::MAX`).
/// A non-zero duration under a millisecond counts as one, so that only a zero is refused.
fn millis(duration: Duration) -> u64 {
    let whole = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if whole == 0 && !duration.is_zero() {
        1
    } else {
        whole
    }
}

/// A JSON number that is a whole number at least zero: `5`, and also `5.0` or `1e3` (JSON does
/// not tell integers from floats, and JSON Schema's `integer` accepts them). Beyond `u64` it
/// saturates (every field is clamped below that anyway). `5.5`, `-1`, `null`, strings: `None`.
fn integer(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let float = value.as_f64()?;
    // `as` saturates at u64::MAX; the checks leave only finite whole numbers >= 0 (or -0.0).
    (float.is_finite() && float.fract() == 0.0 && float >= 0.0).then_some(float as u64)
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
