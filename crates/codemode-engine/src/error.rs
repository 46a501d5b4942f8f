//! The errors of a run, with the exact messages of failed results
//! (`docs/reference.md` lists them).

use serde::{Deserialize, Serialize};

/// The machine-readable failure codes (`code` of a failed result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The program or the call was rejected before running (module access, syntax, bad run id).
    InvalidInput,
    /// The sandbox could not be created or used (VM creation, no tokio runtime).
    RuntimeUnavailable,
    /// The guest was still computing when the deadline of the exec/wait call passed.
    Timeout,
    /// Output items plus the final value exceeded `max_output_bytes`.
    OutputLimitExceeded,
    /// A parked run's measured size exceeded `max_snapshot_bytes`.
    SnapshotLimitExceeded,
    /// A defect on the host side of the bridge; never caused by guest input alone.
    InternalError,
    /// The run was ended on request (`wait` with `terminate: true`).
    Terminated,
    /// The run outlived `maxRunSeconds`, counted from its first `exec`.
    RunLifetimeExceeded,
}

/// Why a run could not start or ended in `failed` (see [`RunError::code`] for its code).
///
/// Guest failures ([`RunError::Guest`], [`RunError::PendingWithoutHostWork`]) carry no code: the
/// program itself is at fault, and the message says how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The program uses `import`, `import()`, `import.meta` or `require(`.
    #[error("code mode module access is disabled.")]
    ModuleAccess,
    /// The program is larger than [`Limits::max_source_bytes`](crate::Limits::max_source_bytes).
    #[error("code mode program is {bytes} bytes; the limit is {limit} bytes.")]
    ProgramTooLarge {
        /// UTF-8 bytes of the program.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The program holds more names than it can compile within the deadline
    /// ([`MAX_PROGRAM_NAMES`](crate::MAX_PROGRAM_NAMES)).
    #[error(
        "code mode program has {names} names; the limit is {limit}. Split the work across cells."
    )]
    ProgramTooComplex {
        /// Names counted (declarations and references).
        names: usize,
        /// The limit.
        limit: usize,
    },
    /// The program does not parse; the text is QuickJS's, e.g. `SyntaxError: unexpected token in expression: ')'`.
    #[error("{0}")]
    Syntax(String),
    /// The VM could not be created or set up, or `drive` ran outside a tokio runtime with timers.
    #[error("code mode runtime unavailable: {0}")]
    RuntimeUnavailable(String),
    /// The guest was still running when the deadline passed (the VM is dropped).
    #[error("code mode timeout exceeded")]
    Timeout,
    /// Output items plus the final value exceeded `max_output_bytes`.
    #[error("code mode output limit exceeded")]
    OutputLimitExceeded,
    /// The VM ran out of its `memory_bytes` budget.
    #[error("code mode memory limit exceeded")]
    MemoryLimitExceeded,
    /// The program awaits something that no pending host work can ever settle.
    #[error("code mode promise is pending without host work")]
    PendingWithoutHostWork,
    /// An uncaught guest exception: `<name>: <message>` for error objects (`Error: boom`), the
    /// value itself for thrown primitives (`boom`), compact JSON for other thrown objects.
    #[error("{0}")]
    Guest(String),
    /// `drive` was called on a run that already completed or failed.
    #[error("code mode run has already finished")]
    Finished,
    /// The host's [`Tape`](crate::Tape) ended the run (e.g. a replay diverged); the message is
    /// the host's.
    #[error("{0}")]
    Aborted(String),
    /// Something the sandbox itself did not expect; a bug rather than guest behaviour.
    #[error("code mode internal error: {0}")]
    Internal(String),
    /// The host ended the run on request (`wait` with `terminate: true`): its VM is dropped and
    /// its host work cancelled.
    #[error("code mode run was terminated.")]
    Terminated,
    /// The run is older than the host's bound on a run's whole life (`maxRunSeconds`, counted
    /// from its first `exec`).
    #[error("code mode run exceeded its lifetime of {seconds} s (maxRunSeconds).")]
    LifetimeExceeded {
        /// The bound, in seconds.
        seconds: u64,
    },
}

impl RunError {
    /// The `code` of a failed result, `None` for guest failures. This is the one mapping from
    /// run failures to result codes; the memory limit ends the VM, so it is an
    /// `internal_error` of the run rather than a guest exception.
    ///
    /// ```
    /// use codemode_engine::{ErrorCode, RunError};
    /// assert_eq!(RunError::Timeout.code(), Some(ErrorCode::Timeout));
    /// assert_eq!(RunError::MemoryLimitExceeded.code(), Some(ErrorCode::InternalError));
    /// assert_eq!(RunError::Guest("Error: boom".into()).code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::ModuleAccess
            | Self::ProgramTooLarge { .. }
            | Self::ProgramTooComplex { .. }
            | Self::Syntax(_) => Some(ErrorCode::InvalidInput),
            Self::RuntimeUnavailable(_) => Some(ErrorCode::RuntimeUnavailable),
            Self::Timeout => Some(ErrorCode::Timeout),
            Self::OutputLimitExceeded => Some(ErrorCode::OutputLimitExceeded),
            Self::MemoryLimitExceeded | Self::Finished | Self::Internal(_) | Self::Aborted(_) => {
                Some(ErrorCode::InternalError)
            }
            Self::Terminated => Some(ErrorCode::Terminated),
            Self::LifetimeExceeded { .. } => Some(ErrorCode::RunLifetimeExceeded),
            Self::PendingWithoutHostWork | Self::Guest(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one table from failures to the stable messages and codes (docs/reference.md lists the
    /// same).
    #[test]
    fn every_failure_has_its_stable_message_and_code() {
        use ErrorCode::*;
        let runs: [(RunError, &str, Option<ErrorCode>); 15] = [
            (
                RunError::Terminated,
                "code mode run was terminated.",
                Some(Terminated),
            ),
            (
                RunError::LifetimeExceeded { seconds: 60 },
                "code mode run exceeded its lifetime of 60 s (maxRunSeconds).",
                Some(RunLifetimeExceeded),
            ),
            (
                RunError::ProgramTooComplex { names: 3, limit: 2 },
                "code mode program has 3 names; the limit is 2. Split the work across cells.",
                Some(InvalidInput),
            ),
            (
                RunError::ModuleAccess,
                "code mode module access is disabled.",
                Some(InvalidInput),
            ),
            (
                RunError::ProgramTooLarge { bytes: 2, limit: 1 },
                "code mode program is 2 bytes; the limit is 1 bytes.",
                Some(InvalidInput),
            ),
            (
                RunError::Syntax("SyntaxError: x".into()),
                "SyntaxError: x",
                Some(InvalidInput),
            ),
            (
                RunError::RuntimeUnavailable("no VM".into()),
                "code mode runtime unavailable: no VM",
                Some(RuntimeUnavailable),
            ),
            (
                RunError::Timeout,
                "code mode timeout exceeded",
                Some(Timeout),
            ),
            (
                RunError::OutputLimitExceeded,
                "code mode output limit exceeded",
                Some(OutputLimitExceeded),
            ),
            (
                RunError::MemoryLimitExceeded,
                "code mode memory limit exceeded",
                Some(InternalError),
            ),
            (
                RunError::PendingWithoutHostWork,
                "code mode promise is pending without host work",
                None,
            ),
            (RunError::Guest("Error: boom".into()), "Error: boom", None),
            (
                RunError::Finished,
                "code mode run has already finished",
                Some(InternalError),
            ),
            (
                RunError::Internal("x".into()),
                "code mode internal error: x",
                Some(InternalError),
            ),
            (
                RunError::Aborted("code mode run diverged during replay: x".into()),
                "code mode run diverged during replay: x",
                Some(InternalError),
            ),
        ];
        for (error, message, code) in runs {
            assert_eq!((error.to_string().as_str(), error.code()), (message, code));
        }
    }
}
