//! The `exec` and `wait` inputs, as the model sends them, and their validation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use codemode_config::Language;

/// Why an `exec` or `wait` input was refused. `Display` gives the stable message of the failed
/// result (code `invalid_input`), listed in `docs/reference.md`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input is not a JSON object.
    #[error("{0} input must be a JSON object.")]
    NotAnObject(&'static str),
    /// Neither `code` nor `command` is a non-empty string.
    #[error("code or command must be a non-empty string.")]
    MissingCode,
    /// `code` and `command` are both given and differ.
    #[error("code and command must match when both are provided.")]
    CodeCommandMismatch,
    /// `language` is not one of the two names.
    #[error("language must be javascript or typescript.")]
    UnknownLanguage,
    /// `restartSafe` is not a boolean.
    #[error("restartSafe must be a boolean.")]
    RestartSafeNotBool,
    /// The program is larger than the 1 MiB source limit (checked before it is copied).
    #[error("code mode program is {bytes} bytes; the limit is {limit} bytes.")]
    ProgramTooLarge {
        /// UTF-8 bytes of the program.
        bytes: usize,
        /// The limit ([`MAX_PROGRAM_BYTES`]).
        limit: usize,
    },
    /// `runId` (or `run_id`) is missing or empty.
    #[error("runId must be a non-empty string.")]
    MissingRunId,
    /// `terminate` is not a boolean.
    #[error("terminate must be a boolean.")]
    TerminateNotBool,
}

/// Largest accepted program, JavaScript or TypeScript, in UTF-8 bytes (1 MiB). A larger one is
/// `invalid_input` before it is copied, compiled or transformed.
pub const MAX_PROGRAM_BYTES: usize = codemode_sandbox::DEFAULT_MAX_SOURCE_BYTES;

/// A validated `exec` input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecInput {
    /// The program: the body of an async function.
    pub code: String,
    /// Its language (default JavaScript).
    pub language: Language,
    /// Read-only work: side-effecting tools and namespaces are refused; results are replay-safe.
    pub restart_safe: bool,
}

impl ExecInput {
    /// A JavaScript cell.
    pub fn javascript(code: impl Into<String>) -> Self {
        ExecInput {
            code: code.into(),
            language: Language::Javascript,
            restart_safe: false,
        }
    }

    /// A TypeScript cell.
    pub fn typescript(code: impl Into<String>) -> Self {
        ExecInput {
            code: code.into(),
            language: Language::Typescript,
            restart_safe: false,
        }
    }

    /// Validates a model-sent `exec` input (`code` / `command` alias, `language`, `restartSafe`).
    ///
    /// ```
    /// use codemode_core::{ExecInput, Language};
    /// let input = ExecInput::from_json(&serde_json::json!({ "command": "return 1", "language": "typescript" })).unwrap();
    /// assert_eq!(input.code, "return 1");
    /// assert_eq!(input.language, Language::Typescript);
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let object = value.as_object().ok_or(InputError::NotAnObject("exec"))?;
        let non_empty = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
        };
        let code = match (non_empty("code"), non_empty("command")) {
            (Some(code), Some(command)) if code != command => {
                return Err(InputError::CodeCommandMismatch);
            }
            (Some(code), _) | (None, Some(code)) if code.len() > MAX_PROGRAM_BYTES => {
                return Err(InputError::ProgramTooLarge {
                    bytes: code.len(),
                    limit: MAX_PROGRAM_BYTES,
                });
            }
            (Some(code), _) | (None, Some(code)) => code.to_owned(),
            (None, None) => return Err(InputError::MissingCode),
        };
        let language = match object.get("language") {
            None | Some(Value::Null) => Language::Javascript,
            Some(value) => value
                .as_str()
                .and_then(Language::parse)
                .ok_or(InputError::UnknownLanguage)?,
        };
        let restart_safe = match object.get("restartSafe") {
            None | Some(Value::Null) => false,
            Some(value) => value.as_bool().ok_or(InputError::RestartSafeNotBool)?,
        };
        Ok(ExecInput {
            code,
            language,
            restart_safe,
        })
    }

    /// The input as the JSON the model would send (used for restart recovery).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "code": self.code,
            "language": self.language.as_str(),
            "restartSafe": self.restart_safe,
        })
    }
}

/// A validated `wait` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitInput {
    /// The `runId` of a `waiting` result.
    pub run_id: String,
    /// `timeoutMs`: the longest this call may idle while the run only awaits tool calls (at
    /// most the config's `maxWaitMs`, which is also the default).
    pub timeout: Option<std::time::Duration>,
    /// `terminate`: end the run now instead of continuing it. Its in-flight nested calls are
    /// cancelled and the result is `failed` with code `terminated`.
    pub terminate: bool,
}

impl WaitInput {
    /// A `wait` for this run, idling at most the config's `maxWaitMs`.
    pub fn new(run_id: impl Into<String>) -> Self {
        WaitInput {
            run_id: run_id.into(),
            timeout: None,
            terminate: false,
        }
    }

    /// A `wait` that ends the run now (`terminate: true`).
    ///
    /// ```
    /// use codemode_core::WaitInput;
    /// let input = WaitInput::from_json(&serde_json::json!({ "runId": "cm_1", "terminate": true })).unwrap();
    /// assert_eq!(input, WaitInput::terminate("cm_1"));
    /// assert!(WaitInput::from_json(&serde_json::json!({ "runId": "cm_1", "terminate": "yes" })).is_err());
    /// ```
    pub fn terminate(run_id: impl Into<String>) -> Self {
        WaitInput {
            terminate: true,
            ..WaitInput::new(run_id)
        }
    }

    /// Validates a model-sent `wait` input (`runId`, or `run_id`; an optional integer
    /// `timeoutMs`, ignored when it is not a non-negative integer; an optional boolean
    /// `terminate`, refused when it is anything else).
    ///
    /// ```
    /// use std::time::Duration;
    /// use codemode_core::WaitInput;
    /// let input = WaitInput::from_json(&serde_json::json!({ "runId": "cm_1", "timeoutMs": 500 })).unwrap();
    /// assert_eq!(input.run_id, "cm_1");
    /// assert_eq!(input.timeout, Some(Duration::from_millis(500)));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let object = value.as_object().ok_or(InputError::NotAnObject("wait"))?;
        let run_id = ["runId", "run_id"]
            .iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str))
            .filter(|id| !id.trim().is_empty())
            .ok_or(InputError::MissingRunId)?;
        let terminate = match object.get("terminate") {
            None | Some(Value::Null) => false,
            Some(value) => value.as_bool().ok_or(InputError::TerminateNotBool)?,
        };
        Ok(WaitInput {
            run_id: run_id.to_owned(),
            timeout: object
                .get("timeoutMs")
                .and_then(Value::as_u64)
                .map(std::time::Duration::from_millis),
            terminate,
        })
    }
}

/// The `exec` tool's wire schema (for schemars; see [`crate::surface`]). Fields are not
/// `Option`s so that no `null` type reaches providers; all of them are optional on the wire.
#[derive(JsonSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
pub(crate) struct ExecSchema {
    /// The program: the body of an async function. Use `return` for the final value.
    #[serde(default)]
    code: String,
    /// Alias of `code` for hook policies; when both are given they must be equal.
    #[serde(default)]
    command: String,
    /// "javascript" (default) or "typescript".
    #[serde(default = "default_language")]
    #[schemars(schema_with = "language_schema")]
    language: String,
    /// Read-only work: side-effecting tools and plugin namespaces are refused; results are replay-safe.
    #[serde(default)]
    restart_safe: bool,
}

fn default_language() -> String {
    Language::Javascript.as_str().to_owned()
}

/// `language` as a FLAT string enum: some model providers reject `oneOf`/`anyOf` in tool schemas.
fn language_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["javascript", "typescript"],
        "description": "\"javascript\" (default) or \"typescript\"."
    })
}

/// The `wait` tool's wire schema.
/// Drops the `"default": null` schemars derives from `#[serde(default)]`: the model sees an
/// optional integer, never a nullable one.
fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

#[derive(JsonSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code, reason = "exists for its JSON Schema only")]
pub(crate) struct WaitSchema {
    /// The runId of a `waiting` exec or wait result.
    run_id: String,
    #[schemars(
        description = "The longest this call may wait while the run only awaits tool calls, in ms (at most the configured maxWaitMs, which is also the default).",
        with = "u64",
        range(min = 1),
        transform = without_default
    )]
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// End the run now instead of continuing it: its pending tool calls are cancelled and the
    /// result is `failed` with code `terminated`, keeping the output and telemetry. Use it when
    /// the run is no longer wanted: it waits on something that will not come, it is doing the
    /// wrong work, or the task changed.
    #[serde(default)]
    terminate: bool,
}
