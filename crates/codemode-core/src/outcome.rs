//! Turns sandbox steps and errors into the `exec` / `wait` result shapes (completed, waiting,
//! failed; see [`CodeModeResult`]).

use codemode_sandbox::{LegEnd, RunError, StoreError};

use crate::result::{
    CodeModeResult, ErrorCode, OutputItem, PendingToolCall, Telemetry, WaitFailure, WaitReason,
};

pub(crate) fn failed_run(
    error: RunError,
    items: Vec<OutputItem>,
    telemetry: Telemetry,
) -> CodeModeResult {
    CodeModeResult::Failed {
        code: error.code(),
        error: error.to_string(),
        reason: None,
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
        reason: None,
        output: items,
        telemetry,
    }
}

/// A `wait` the store refused: the store's message and code, and the machine-readable reason.
/// `expired` tells an `Unavailable` run this session parked and saw expire from an unknown one.
pub(crate) fn wait_failed(
    error: StoreError,
    expired: bool,
    telemetry: Telemetry,
) -> CodeModeResult {
    let reason = match error {
        StoreError::Unavailable if expired => Some(WaitFailure::Expired),
        StoreError::Unavailable => Some(WaitFailure::Unknown),
        StoreError::DifferentSession => Some(WaitFailure::OtherSession),
        StoreError::DifferentAgentRun => Some(WaitFailure::OtherAgentRun),
        StoreError::AlreadyResuming => Some(WaitFailure::AlreadyResuming),
        _ => None,
    };
    CodeModeResult::Failed {
        code: Some(error.code()),
        error: error.to_string(),
        reason,
        output: Vec::new(),
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
pub(crate) fn finished(step: LegEnd, replay_safe: bool, telemetry: Telemetry) -> CodeModeResult {
    match step {
        LegEnd::Completed {
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
        LegEnd::Failed {
            error,
            output: items,
        } => failed_run(error, items, telemetry),
        LegEnd::Suspended { output: items, .. } => CodeModeResult::Failed {
            error: "code mode run suspended unexpectedly.".into(),
            code: Some(ErrorCode::InternalError),
            reason: None,
            output: items,
            telemetry,
        },
    }
}
