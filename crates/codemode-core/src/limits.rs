//! The config's limits as the sandbox enforces them: [`sandbox_limits`] turns a
//! [`CodeModeConfig`] into the sandbox's [`Limits`], and the checks below keep the config's
//! defaults (`codemode-config`, which knows no sandbox) equal to the sandbox's own (one fact,
//! checked where both are known: a drift fails the build).

use codemode_sandbox::Limits;

use crate::CodeModeConfig;

const _: () = {
    assert!(crate::DEFAULT_MEMORY_LIMIT_BYTES == codemode_sandbox::DEFAULT_MEMORY_BYTES as u64);
    assert!(crate::DEFAULT_MAX_OUTPUT_BYTES == codemode_sandbox::DEFAULT_MAX_OUTPUT_BYTES as u64);
    assert!(
        crate::DEFAULT_MAX_SNAPSHOT_BYTES == codemode_sandbox::DEFAULT_MAX_SNAPSHOT_BYTES as u64
    );
    assert!(
        crate::DEFAULT_MAX_PENDING_TOOL_CALLS == codemode_sandbox::DEFAULT_MAX_PENDING_CALLS as u64
    );
    assert!(
        crate::DEFAULT_MAX_QUEUED_TOOL_CALLS == codemode_sandbox::DEFAULT_MAX_QUEUED_CALLS as u64
    );
};

/// The sandbox limits of every run under `config`.
pub(crate) fn sandbox_limits(config: &CodeModeConfig) -> Limits {
    Limits {
        memory_bytes: config.memory_limit_bytes() as usize,
        max_output_bytes: config.max_output_bytes() as usize,
        max_pending_calls: config.max_pending_tool_calls() as usize,
        max_queued_calls: config.max_queued_tool_calls() as usize,
        max_snapshot_bytes: config.max_snapshot_bytes() as usize,
        ..Limits::default()
    }
}
