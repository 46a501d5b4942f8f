//! State shared by a session and the bridge hosts of its runs, and the bridge method names the
//! guest setup and the bridge host agree on. A leaf: it imports no other module that wires a
//! session (`session`, `activation`, `guest`, `bridge`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use codemode_catalog::{Catalog, SearchLimits};
use codemode_mcp_decls::McpDecls;
use codemode_namespaces::NamespaceRuntime;
use codemode_sandbox::{Placement, PreparedSetup};

use crate::CodeModeConfig;
use crate::result::Telemetry;
use crate::surface::ModelTool;
use codemode_host::{AgentRunContext, EventSink, ToolExecutor};

/// Bridge method of `tools.call(id, input)` and `tools.<name>(input)` (`[id, input]`).
pub(crate) const TOOLS_CALL: &str = "tools.call";
/// Bridge method of `MCP.<server>.<tool>(input)` (`[catalog id, ...guest args]`).
pub(crate) const MCP_CALL: &str = "mcp.call";
/// Bridge method of `MCP.<server>.resources.*` / `prompts.*` (`[capability id, ...guest args]`,
/// the id an `mcp-capability:<server>:<method>` of [`codemode_catalog::McpCapability`]).
pub(crate) const MCP_CAPABILITY: &str = "mcp.capability";
/// Synchronous method of `tools.search(query, options?)`.
pub(crate) const TOOLS_SEARCH: &str = "tools.search";
/// Synchronous method of `tools.describe(id)`.
pub(crate) const TOOLS_DESCRIBE: &str = "tools.describe";
/// Synchronous method of `MCP.<server>.$api(tool?, options?)` (`[server ident, ...guest args]`).
pub(crate) const MCP_API: &str = "mcp.api";
/// Synchronous method of `API.list(prefix?)`.
pub(crate) const API_LIST: &str = "api.list";
/// Synchronous method of `API.read(path)`.
pub(crate) const API_READ: &str = "api.read";
/// Synchronous methods of `results.save/load/delete/list`.
pub(crate) const RESULTS_SAVE: &str = "results.save";
pub(crate) const RESULTS_LOAD: &str = "results.load";
pub(crate) const RESULTS_DELETE: &str = "results.delete";
pub(crate) const RESULTS_LIST: &str = "results.list";
/// Bridge method of a namespace verb (`[namespace id, path, ...guest args]`).
pub(crate) const NAMESPACE_CALL: &str = "namespace.call";

/// Counters of one code-mode run (exec plus its waits).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) search: AtomicU64,
    pub(crate) describe: AtomicU64,
    pub(crate) call: AtomicU64,
}

/// What a session shares with the bridge hosts of its runs. It holds no handle to the snapshot
/// store, so that a parked run (whose host holds this) never keeps the store alive: dropping the
/// last [`CodeMode`] and [`CodeModeSession`] releases every parked VM.
pub(crate) struct SessionState {
    pub(crate) config: CodeModeConfig,
    /// The code mode's host memory budget, and this session's number in its turns.
    pub(crate) budget: std::sync::Arc<crate::budget::MemoryBudget>,
    pub(crate) budget_session: u64,
    pub(crate) executor: Arc<dyn ToolExecutor>,
    pub(crate) events: Arc<dyn EventSink>,
    pub(crate) agent_run: AgentRunContext,
    pub(crate) catalog: Arc<Catalog>,
    /// The guest setup of every run of the session, prepared once at activation (the catalog
    /// never changes within a session); `ALL_TOOLS`, `tools` and `MCP` are built in a run only
    /// when its guest reads them.
    pub(crate) guest: PreparedSetup,
    /// Where runs execute (the code mode's placement, shared).
    pub(crate) placement: Placement,
    /// The text of `guest/globals.d.ts` (it names the host source), made once for `API.list`
    /// and `API.read`.
    pub(crate) guest_dts: Arc<str>,
    pub(crate) mcp: Option<Arc<McpDecls>>,
    /// The `mcp-capability:<server>:<method>` ids the guest may call ([`McpCapability::id`]).
    pub(crate) mcp_capability_ids: Vec<String>,
    pub(crate) namespaces: Arc<NamespaceRuntime>,
    pub(crate) model_tools: Vec<ModelTool>,
    pub(crate) direct_only: Vec<String>,
    pub(crate) telemetry: Telemetry,
    pub(crate) search_limits: SearchLimits,
    /// The `results` store of this session: cleared when the session is dropped.
    pub(crate) results: Arc<crate::saved_results::SavedResults>,
    /// Set when the session is dropped: namespace handlers of its runs observe it.
    pub(crate) cancelled: Arc<AtomicBool>,
    /// When each run this session parked expires, so that a `wait` the store cannot answer
    /// says `expired` rather than `unknown`.
    pub(crate) park_deadlines: ParkDeadlines,
    /// The life of each run this session parked (terminate, `maxRunSeconds`; run_life.rs).
    pub(crate) lives: crate::run_life::RunLives,
    /// The life of each journaled run a `wait` of this session replays right now: the store
    /// does not hold it, and its journal is claimed, so `terminate` finds it here.
    pub(crate) replaying: crate::run_life::RunLives,
}

/// Most run ids a session remembers the expiry of; past it, the earliest deadline is forgotten
/// (a `wait` for that run then fails as `unknown` instead of `expired`).
const REMEMBERED_PARK_DEADLINES: usize = 1024;

/// The expiry instant of each run a session parked, bounded by [`REMEMBERED_PARK_DEADLINES`].
/// Only a hint for the failure reason of `wait`: the snapshot store alone decides whether a run
/// can be resumed.
#[derive(Debug, Default)]
pub(crate) struct ParkDeadlines(Mutex<HashMap<String, Instant>>);

impl ParkDeadlines {
    /// Records (or moves) the deadline of a parked run.
    pub(crate) fn record(&self, run_id: &str, deadline: Instant) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= REMEMBERED_PARK_DEADLINES
            && !map.contains_key(run_id)
            && let Some(earliest) = map
                .iter()
                .min_by_key(|(_, deadline)| **deadline)
                .map(|(id, _)| id.clone())
        {
            map.remove(&earliest);
        }
        map.insert(run_id.to_owned(), deadline);
    }

    /// Forgets a run that finished or was cancelled.
    pub(crate) fn forget(&self, run_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
    }

    /// Whether the run was parked here and its deadline has passed at `now` (on the clock of the
    /// store that parked it).
    pub(crate) fn expired(&self, run_id: &str, now: Instant) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .is_some_and(|deadline| *deadline <= now)
    }
}

impl Drop for SessionState {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}
