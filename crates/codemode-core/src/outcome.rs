//! Turns sandbox steps and errors into the `exec` / `wait` result shapes of SPEC §6.

use codemode_sandbox::{RunError, Step, StoreError};

use crate::result::{
    CodeModeResult, ErrorCode, OutputItem, PendingToolCall, Telemetry, WaitReason,
};

pub(crate) fn failed_run(
    error: RunError,
    items: Vec<OutputItem>,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Failed {
        code: error.code(),
        error: error.to_string(),
        output: items,
        telemetry,
    }
}

pub(crate) fn store_failed(
    error: StoreError,
    items: Vec<OutputItem>,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Failed {
        code: Some(error.code()),
        error: error.to_string(),
        output: items,
        telemetry,
    }
}

pub(crate) fn waiting(
    run_id: String,
    reason: WaitReason,
    pending_tool_calls: Vec<PendingToolCall>,
    items: Vec<OutputItem>,
    replay_safe: bool,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Waiting {
        run_id,
        reason,
        pending_tool_calls,
        output: items,
        replay_safe,
        telemetry,
    }
}

/// A step that ends the run: completed or failed.
pub(crate) fn finished(step: Step, replay_safe: bool, telemetry: Telemetry) -> CodeModeResult {
    match step {
        Step::Completed {
            value,
            output: items,
            truncated,
        } => CodeModeResult::Completed {
            value,
            output: items,
            truncated,
            replay_safe,
            telemetry,
        },
        Step::Failed {
            error,
            output: items,
        } => failed_run(error, items, telemetry),
        Step::Suspended { output: items, .. } => CodeModeResult::Failed {
            error: "code mode run suspended unexpectedly.".into(),
            code: Some(ErrorCode::InternalError),
            output: items,
            telemetry,
        },
    }
}
