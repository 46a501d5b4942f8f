//! The resource limits of one run, with the defaults of the `tools.codeMode` config keys.

use serde::{Deserialize, Serialize};

/// Default VM heap budget (64 MiB, config key `memoryLimitBytes`).
pub const DEFAULT_MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// Default native stack budget for guest code (512 KiB).
pub const DEFAULT_STACK_BYTES: usize = 512 * 1024;
/// Default output budget (64 KiB, config key `maxOutputBytes`).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 65_536;
/// Default number of bridge calls in flight at once (config key `maxPendingToolCalls`).
pub const DEFAULT_MAX_PENDING_CALLS: usize = 16;
/// Default size budget of a parked run (10 MiB, config key `maxSnapshotBytes`).
pub const DEFAULT_MAX_SNAPSHOT_BYTES: usize = 10 * 1024 * 1024;
/// Default number of further bridge calls that wait, in FIFO order, while
/// `max_pending_calls` are in flight (config key `maxQueuedToolCalls`).
pub const DEFAULT_MAX_QUEUED_CALLS: usize = 1024;
/// Default budget for the JSON arguments of one bridge call (8 MiB).
pub const DEFAULT_MAX_CALL_ARGS_BYTES: usize = 8 * 1024 * 1024;
/// Default largest program accepted, in UTF-8 bytes (1 MiB, like TypeScript cells).
pub const DEFAULT_MAX_SOURCE_BYTES: usize = codemode_jslex::DEFAULT_MAX_SOURCE_BYTES;
/// Deepest nesting accepted for JSON crossing the bridge in either direction.
///
/// Deeper values are refused with a guest-visible error instead of risking the host's stack.
pub const MAX_JSON_DEPTH: usize = 128;

/// Stack of each VM thread (the sandbox's VM threads, a worker process's step thread). Guest
/// recursion is bounded by [`Limits::stack_bytes`], far below this; the rest is for the host
/// natives. Pages are committed only when touched.
pub const VM_THREAD_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Largest guest stack accepted on a VM thread; a larger `Limits::stack_bytes` is lowered to it.
pub const MAX_GUEST_STACK_BYTES: usize = VM_THREAD_STACK_BYTES / 2;

/// The limits of one run, plain data (it crosses to a worker process as it is). Construct with
/// [`Limits::default`] and override fields, or use the `with_*` builder methods. Time is not a
/// limit here: each leg's deadline is the argument of `Run::drive` (codemode-sandbox), and
/// where the run executes is its `Placement`.
///
/// What the limits do *not* cover: host work done for bridge calls (its time and memory belong to
/// the host), time spent while the run is parked, and the host memory of settled results beyond
/// what the VM holds.
///
/// Limitations with malicious guests: a leg's deadline is enforced by QuickJS's interrupt handler,
/// which quickjs-ng calls about every 10,000 calls and back-edges of guest code and never inside
/// a native built-in; every host callback checks it as well, and built-ins whose native loops
/// can run long are bounded before guest code runs (docs/builtins-audit.md lists each). One
/// deadline covers building the VM, compiling the program and running it. A step that still
/// has not returned at the deadline plus `DEADLINE_GRACE` (codemode-sandbox) is abandoned:
/// the leg fails with `timeout` at once and the VM is dropped on its own thread when the native
/// call it is stuck in returns. A failure is reported as the memory limit exactly when QuickJS
/// threw what it throws for a failed allocation (`null` or `InternalError: out of memory`) and
/// the VM's allocator refused an allocation during that step; a guest's own `throw null` is its
/// error.
///
/// ```
/// use codemode_engine::Limits;
///
/// let limits = Limits::default().with_memory_bytes(8 << 20);
/// assert_eq!(limits.memory_bytes, 8 << 20);
/// assert_eq!(limits.max_pending_calls, codemode_engine::DEFAULT_MAX_PENDING_CALLS);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// QuickJS heap budget in bytes (everything the VM allocates, counted by the VM's own
    /// allocator, QuickJS's small-block arenas whole). Exceeding it fails the run with "code mode
    /// memory limit exceeded" unless the guest catches the error.
    pub memory_bytes: usize,
    /// Native stack budget for guest code. Deep recursion beyond it throws a catchable
    /// `RangeError`. The thread that calls `Run::drive` (codemode-sandbox) needs at least this
    /// much free stack plus about 256 KiB (tokio's 2 MiB worker stacks are ample).
    pub stack_bytes: usize,
    /// Budget for all output items plus the final value, counted as UTF-8 bytes of their JSON,
    /// cumulative over the whole run.
    pub max_output_bytes: usize,
    /// Bridge calls in flight at once; the next one rejects in the guest with
    /// "too many pending code mode tool calls".
    pub max_pending_calls: usize,
    /// Size budget of a parked run (checked by the `SnapshotStore` (codemode-sandbox)).
    pub max_snapshot_bytes: usize,
    /// Further bridge calls that wait in a FIFO queue while `max_pending_calls` are in flight;
    /// the call after that rejects in the guest with "too many pending code mode tool calls".
    pub max_queued_calls: usize,
    /// Budget for the JSON arguments of a single bridge call; a larger call rejects in the guest
    /// before the host parses it. All started and queued calls of a run together hold at most
    /// [`Limits::max_in_flight_args_bytes`].
    pub max_call_args_bytes: usize,
    /// Largest program accepted by `Run::start`, in UTF-8 bytes.
    pub max_source_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            stack_bytes: DEFAULT_STACK_BYTES,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_pending_calls: DEFAULT_MAX_PENDING_CALLS,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            max_queued_calls: DEFAULT_MAX_QUEUED_CALLS,
            max_call_args_bytes: DEFAULT_MAX_CALL_ARGS_BYTES,
            max_source_bytes: DEFAULT_MAX_SOURCE_BYTES,
        }
    }
}

impl Limits {
    /// Sets [`Limits::memory_bytes`].
    #[must_use]
    pub fn with_memory_bytes(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets [`Limits::stack_bytes`].
    #[must_use]
    pub fn with_stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_output_bytes`].
    #[must_use]
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_pending_calls`].
    #[must_use]
    pub fn with_max_pending_calls(mut self, calls: usize) -> Self {
        self.max_pending_calls = calls;
        self
    }

    /// Sets [`Limits::max_snapshot_bytes`].
    #[must_use]
    pub fn with_max_snapshot_bytes(mut self, bytes: usize) -> Self {
        self.max_snapshot_bytes = bytes;
        self
    }

    /// Sets [`Limits::max_queued_calls`].
    #[must_use]
    pub fn with_max_queued_calls(mut self, calls: usize) -> Self {
        self.max_queued_calls = calls;
        self
    }

    /// Sets [`Limits::max_source_bytes`].
    #[must_use]
    pub fn with_max_source_bytes(mut self, bytes: usize) -> Self {
        self.max_source_bytes = bytes;
        self
    }

    /// JSON bytes of arguments that the started and queued calls of one run may hold together:
    /// an eighth of [`Limits::memory_bytes`], at least 1 KiB. Parsed JSON takes at most about 16 bytes of host memory
    /// per byte of text (a 2-byte `0,` becomes a 32-byte value), so a run's arguments hold at
    /// most about twice `memory_bytes` of host memory.
    pub fn max_in_flight_args_bytes(&self) -> usize {
        (self.memory_bytes / 8).max(1024)
    }

    /// Sets [`Limits::max_call_args_bytes`].
    #[must_use]
    pub fn with_max_call_args_bytes(mut self, bytes: usize) -> Self {
        self.max_call_args_bytes = bytes;
        self
    }
}
