//! The host side of the JSON bridge: requests the guest makes and the trait that answers them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The id of one bridge request, unique within its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One call from the guest to the host: the [`Callable::Bridge`](crate::Callable::Bridge)
/// method and `bound_args ++ guest args`, all plain JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeRequest {
    /// Unique within the run.
    pub id: RequestId,
    /// The method of the callable the guest called.
    pub method: String,
    /// Bound arguments followed by the guest's (an `undefined` guest argument becomes `null`).
    pub args: Vec<Value>,
}

/// A bridge call that has not been settled into the VM yet (for the `waiting` result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The request's id.
    pub id: RequestId,
    /// The bridge method.
    pub method: String,
    /// Whether the host call has started (`false`: it waits in the FIFO queue behind
    /// `max_pending_calls` calls in flight).
    pub started: bool,
}

/// The host side of the bridge.
///
/// Called once per bridge request. The sandbox spawns the future on the current tokio runtime, so
/// host work keeps running while a run is parked; dropping the run aborts it. `Ok(json)` resolves
/// the guest promise, `Err(message)` rejects it with a plain `Error(message)` the guest can catch.
/// A panicking call rejects the guest promise with "code mode host call failed".
///
/// ```
/// use codemode_engine::{BridgeHost, BridgeRequest};
///
/// struct Echo;
///
/// #[async_trait::async_trait]
/// impl BridgeHost for Echo {
///     async fn call(&self, request: BridgeRequest) -> Result<serde_json::Value, String> {
///         Ok(serde_json::Value::Array(request.args))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait BridgeHost: Send + Sync + 'static {
    /// Answers one bridge request.
    async fn call(&self, request: BridgeRequest) -> Result<Value, String>;

    /// Answers one call of a [`Callable::Sync`](crate::Callable::Sync) synchronously, on the VM
    /// thread, while the VM waits: it must be quick and must not block (no I/O, no locks held
    /// for long). `request.id` is `RequestId(0)`: synchronous calls are never pending. A panic
    /// rejects the guest promise with "code mode host call failed". The default refuses every
    /// method.
    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        Err(format!("unknown code mode function {}", request.method))
    }

    /// The tape that records or replays this run's nondeterministic inputs (see
    /// [`Tape`](crate::Tape)), asked once when the run's VM is built. The default has none: the
    /// guest reads its clock and random source directly and timers fire by the clock.
    fn tape(&self) -> Option<std::sync::Arc<dyn crate::Tape>> {
        None
    }

    /// Sees the output items of a run as its VM produces them: after each engine step that
    /// produced some (the guest awaited host work or a timer, yielded, or ended), on the task
    /// that drives the run, before the leg's result. The same items are in the leg's
    /// `LegEnd` (codemode-sandbox) as always: this is only an early look (for progress reports), and
    /// it must be quick. The default ignores them.
    fn on_output(&self, items: &[crate::OutputItem]) {
        let _ = items;
    }
}
