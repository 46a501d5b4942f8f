//! The refusals of the snapshot store, with the exact messages of failed results
//! (`docs/reference.md` lists them).

use codemode_engine::ErrorCode;

/// Why the [`SnapshotStore`](super::SnapshotStore) refused to park or resume a run.
///
/// Separate from [`RunError`](crate::RunError) because every store failure has a result code and
/// none of them is the guest's doing; the core reports both through the same failed-result shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Unknown, malformed, expired, cancelled or already finished run id.
    #[error("code mode run is unavailable or expired.")]
    Unavailable,
    /// The run was parked by another session (id or key).
    #[error("code mode run belongs to a different session.")]
    DifferentSession,
    /// The run was parked by another agent run.
    #[error("code mode run belongs to a different agent run.")]
    DifferentAgentRun,
    /// Another caller is resuming this run right now.
    #[error("code mode run is already being resumed.")]
    AlreadyResuming,
    /// The process-wide cap of parked runs ([`MAX_SUSPENDED_RUNS`](super::MAX_SUSPENDED_RUNS)) is reached.
    #[error("too many suspended code mode runs.")]
    TooManySuspendedRuns,
    /// The run's measured size is over `max_snapshot_bytes` (the run is dropped).
    #[error("code mode snapshot limit exceeded")]
    SnapshotLimitExceeded,
}

impl StoreError {
    /// The `code` of the failed result: a full store is the caller's to fix (wait for or cancel
    /// a parked run), so it is `invalid_input` like every other refusal of the store.
    ///
    /// ```
    /// use codemode_sandbox::{ErrorCode, StoreError};
    /// assert_eq!(StoreError::Unavailable.code(), ErrorCode::InvalidInput);
    /// assert_eq!(StoreError::SnapshotLimitExceeded.code(), ErrorCode::SnapshotLimitExceeded);
    /// ```
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unavailable
            | Self::DifferentSession
            | Self::DifferentAgentRun
            | Self::AlreadyResuming
            | Self::TooManySuspendedRuns => ErrorCode::InvalidInput,
            Self::SnapshotLimitExceeded => ErrorCode::SnapshotLimitExceeded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_codes_are_the_documented_ones() {
        use ErrorCode::{InvalidInput, SnapshotLimitExceeded};
        let stores = [
            (
                StoreError::Unavailable,
                "code mode run is unavailable or expired.",
                InvalidInput,
            ),
            (
                StoreError::DifferentSession,
                "code mode run belongs to a different session.",
                InvalidInput,
            ),
            (
                StoreError::DifferentAgentRun,
                "code mode run belongs to a different agent run.",
                InvalidInput,
            ),
            (
                StoreError::AlreadyResuming,
                "code mode run is already being resumed.",
                InvalidInput,
            ),
            (
                StoreError::TooManySuspendedRuns,
                "too many suspended code mode runs.",
                InvalidInput,
            ),
            (
                StoreError::SnapshotLimitExceeded,
                "code mode snapshot limit exceeded",
                SnapshotLimitExceeded,
            ),
        ];
        for (error, message, code) in stores {
            assert_eq!((error.to_string().as_str(), error.code()), (message, code));
        }
    }
}
