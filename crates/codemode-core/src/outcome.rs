//! Turns sandbox steps and errors into the `exec` / `wait` result shapes of SPEC §6.

use codemode_sandbox::{RunError, Step, StoreError, SuspendReason};

use crate::result::{CodeModeResult, ErrorCode, Output, PendingToolCall, Telemetry, WaitReason};

fn output(items: Vec<codemode_sandbox::Output>) -> Vec<Output> {
    items
        .into_iter()
        .map(|item| match item {
            codemode_sandbox::Output::Text(text) => Output::Text { text },
            codemode_sandbox::Output::Json(value) => Output::Json { value },
        })
        .collect()
}

pub(crate) fn failed_run(
    error: RunError,
    items: Vec<codemode_sandbox::Output>,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Failed {
        code: error.code(),
        error: error.to_string(),
        output: output(items),
        telemetry,
    }
}

pub(crate) fn store_failed(
    error: StoreError,
    items: Vec<codemode_sandbox::Output>,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Failed {
        code: Some(error.code()),
        error: error.to_string(),
        output: output(items),
        telemetry,
    }
}

pub(crate) fn waiting(
    run_id: String,
    reason: SuspendReason,
    pending_tool_calls: Vec<PendingToolCall>,
    items: Vec<codemode_sandbox::Output>,
    replay_safe: bool,
    telemetry: Telemetry,
) -> CodeModeResult {
    let reason = match reason {
        SuspendReason::Yield => WaitReason::Yield,
        _ => WaitReason::PendingTools,
    };
    CodeModeResult::Waiting {
        run_id,
        reason,
        pending_tool_calls,
        output: output(items),
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
            output: output(items),
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
            output: output(items),
            telemetry,
        },
    }
}
