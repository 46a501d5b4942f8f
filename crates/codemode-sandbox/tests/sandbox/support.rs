//! Shared test host and helpers for the sandbox integration tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, Callable, GuestSetup, LegEnd, Limits, OutputItem, Placement,
    PreparedSetup, Run, RunError, WorkerCommand, WorkerPool, WorkerPoolConfig, async_trait,
};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

/// A host whose behaviour is chosen by the bridge method name.
pub(crate) struct TestHost {
    pub(crate) calls: AtomicUsize,
    /// Requests seen, in arrival order.
    pub(crate) seen: Mutex<Vec<BridgeRequest>>,
    /// Permits released by the test let `gate` calls finish.
    pub(crate) gate: Arc<Semaphore>,
    /// Ids of `never`/`gate` calls whose future was dropped before finishing.
    pub(crate) cancelled: mpsc::UnboundedSender<u64>,
    /// Values returned by `value(i)`.
    pub(crate) values: Vec<Value>,
}

impl TestHost {
    pub(crate) fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<u64>) {
        Self::with_values(Vec::new())
    }

    pub(crate) fn with_values(values: Vec<Value>) -> (Arc<Self>, mpsc::UnboundedReceiver<u64>) {
        let (cancelled, receiver) = mpsc::unbounded_channel();
        let host = Self {
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            gate: Arc::new(Semaphore::new(0)),
            cancelled,
            values,
        };
        (Arc::new(host), receiver)
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Reports a dropped (cancelled) host future.
struct CancelSignal {
    id: u64,
    sender: mpsc::UnboundedSender<u64>,
    finished: bool,
}

impl Drop for CancelSignal {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.sender.send(self.id);
        }
    }
}

#[async_trait]
impl BridgeHost for TestHost {
    /// `search` answers `{ query }`, `fail` refuses, `panic` panics.
    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        match request.method.as_str() {
            "search" => Ok(json!({"query": request.args.first().cloned().unwrap_or(Value::Null)})),
            "fail" => Err("local nope".into()),
            "panic" => panic!("a panicking synchronous host call"),
            other => Err(format!("unknown sync method {other}")),
        }
    }

    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(request.clone());
        let first = request.args.first().cloned().unwrap_or(Value::Null);
        match request.method.as_str() {
            "echo" => Ok(first),
            "args" => Ok(Value::Array(request.args)),
            "fail" => Err(first.as_str().unwrap_or("host failure").to_owned()),
            "panic" => panic!("test host panics on purpose"),
            "never" => {
                let _signal = CancelSignal { id: request.id.0, sender: self.cancelled.clone(), finished: false };
                std::future::pending::<()>().await;
                Ok(Value::Null)
            }
            "gate" => {
                let mut signal = CancelSignal { id: request.id.0, sender: self.cancelled.clone(), finished: false };
                let permit = self.gate.acquire().await.map_err(|e| e.to_string())?;
                permit.forget();
                signal.finished = true;
                Ok(first)
            }
            "value" => {
                let index = first.as_u64().unwrap_or(0) as usize;
                Ok(self.values.get(index).cloned().unwrap_or(Value::Null))
            }
            "proto" => Ok(serde_json::from_str(
                r#"{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "ok": 1}"#,
            )
            .unwrap()),
            "deep" => {
                let mut value = json!(1);
                for _ in 0..200 {
                    value = json!([value]);
                }
                Ok(value)
            }
            other => Err(format!("unknown method {other}")),
        }
    }
}

fn bridge(method: &str, bound: Vec<Value>) -> Callable {
    Callable::Bridge {
        method: method.into(),
        bound_args: bound,
    }
}

fn path(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

/// Globals every test program sees: `ALL_TOOLS`, `tools.{call,echo,search}`,
/// `host.<method>` for each test host method, `local.{echo,fail}`.
pub(crate) fn setup() -> GuestSetup {
    let mut setup = GuestSetup::default();
    setup.values.push((
        path(&["ALL_TOOLS"]),
        json!([{"id": "openclaw:core:echo", "name": "echo"}]),
    ));
    setup
        .callables
        .push((path(&["tools", "call"]), bridge("args", vec![])));
    setup.callables.push((
        path(&["tools", "echo"]),
        bridge("args", vec![json!("openclaw:core:echo")]),
    ));
    setup.callables.push((
        path(&["tools", "search"]),
        Callable::Sync {
            method: "search".into(),
            bound_args: vec![],
        },
    ));
    for method in [
        "echo", "args", "fail", "panic", "never", "gate", "value", "proto", "deep",
    ] {
        setup
            .callables
            .push((path(&["host", method]), bridge(method, vec![])));
    }
    setup.callables.push((
        path(&["local", "fail"]),
        Callable::Sync {
            method: "fail".into(),
            bound_args: vec![],
        },
    ));
    setup.values.push((path(&["namespaces"]), json!({})));
    setup
        .aliases
        .push((path(&["namespaces", "Host"]), path(&["host"])));
    setup.freeze = ["ALL_TOOLS", "tools", "host", "local", "namespaces"]
        .map(String::from)
        .to_vec();
    setup
}

/// What a test varies about a run: the sandbox's limits, each leg's timeout (the deadline it
/// drives to) and where the VM lives.
#[derive(Debug, Clone)]
pub(crate) struct TestLimits {
    pub(crate) sandbox: Limits,
    pub(crate) timeout: Duration,
    pub(crate) placement: Placement,
}

impl TestLimits {
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Every VM in a worker process of `pool`.
    pub(crate) fn in_process(mut self, pool: WorkerPool) -> Self {
        self.placement = Placement::Process(pool);
        self
    }

    pub(crate) fn with(mut self, set: impl FnOnce(Limits) -> Limits) -> Self {
        self.sandbox = set(self.sandbox);
        self
    }

    pub(crate) fn with_memory_bytes(self, bytes: usize) -> Self {
        self.with(|limits| limits.with_memory_bytes(bytes))
    }

    pub(crate) fn with_max_output_bytes(self, bytes: usize) -> Self {
        self.with(|limits| limits.with_max_output_bytes(bytes))
    }

    pub(crate) fn start(
        &self,
        program: &str,
        setup: impl Into<PreparedSetup>,
        host: Arc<dyn BridgeHost>,
    ) -> Result<Run, RunError> {
        Run::start(program, setup, &self.sandbox, &self.placement, host)
    }
}

/// The tests' limits: a small heap, on a VM thread, and a timeout no machine comes near (a test
/// that needs a deadline to pass sets a short one of its own).
pub(crate) fn limits() -> TestLimits {
    TestLimits {
        sandbox: Limits::default().with_memory_bytes(16 << 20),
        timeout: UNREACHED_TIMEOUT,
        placement: Placement::Thread,
    }
}

/// A timeout no machine comes near, for programs that end on their own (completed, or failed by
/// another limit): their outcome then never depends on how busy the machine is.
pub(crate) const UNREACHED_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) fn deadline(limits: &TestLimits) -> Instant {
    Instant::now() + limits.timeout
}

/// Starts and drives one leg; start errors are reported as a failed step.
pub(crate) async fn run_with(program: &str, limits: TestLimits, host: Arc<TestHost>) -> LegEnd {
    match limits.start(program, setup(), host) {
        Ok(mut run) => run.drive(deadline(&limits)).await,
        Err(error) => LegEnd::Failed {
            error,
            output: Vec::new(),
        },
    }
}

/// A run suspended on `host.never(7)`, its request 1 (cancelled, through `host`, once the run is
/// dropped): what the tests of parking and expiry park.
pub(crate) async fn suspended_on_never(host: &Arc<TestHost>) -> Run {
    let mut run = limits()
        .start("return await host.never(7)", setup(), Arc::clone(host) as _)
        .unwrap();
    let step = run.drive(Instant::now() + Duration::from_millis(500)).await;
    assert!(
        matches!(step, LegEnd::Suspended { .. }),
        "{}",
        render(&step)
    );
    run
}

/// A compact, comparable rendering of a step.
pub(crate) fn render(step: &LegEnd) -> String {
    let output = |output: &[OutputItem]| {
        if output.is_empty() {
            String::new()
        } else {
            format!(" output={}", serde_json::to_string(output).unwrap())
        }
    };
    match step {
        LegEnd::Completed {
            value,
            output: items,
            truncated,
        } => {
            let cut = truncated.map_or(String::new(), |t| {
                format!(" truncated={}/{}", t.kept_bytes, t.original_bytes)
            });
            format!("completed {value}{}{cut}", output(items))
        }
        LegEnd::Suspended {
            reason,
            pending,
            output: items,
        } => {
            let methods: Vec<&str> = pending.iter().map(|p| p.method.as_str()).collect();
            format!("suspended {reason:?} pending={methods:?}{}", output(items))
        }
        LegEnd::Failed {
            error,
            output: items,
        } => {
            let code = error
                .code()
                .map_or("-".to_owned(), |c| serde_json::to_string(&c).unwrap());
            format!("failed {code} {error}{}", output(items))
        }
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `program` for one leg with the test limits and compares the rendered step.
#[track_caller]
pub(crate) fn check(program: &str, expect: &str) {
    check_with(program, limits(), expect);
}

#[track_caller]
pub(crate) fn check_with(program: &str, limits: TestLimits, expect: &str) {
    let (host, _cancelled) = TestHost::new();
    let step = runtime().block_on(run_with(program, limits, host));
    assert_eq!(render(&step), expect, "program: {program}");
}

/// The worker binary of these tests (built by the default `test-worker` feature): the real
/// worker, or a misbehaving one when its first argument names a misbehaviour.
pub(crate) const TEST_WORKER: &str = env!("CARGO_BIN_EXE_codemode-test-worker");

/// A pool of test workers; `misbehaviour` (`garbage`, `flood`, `stall`, `open-file`, ...: see
/// codemode-worker's `Misbehaviour::from_arg`) makes every worker of the pool misbehave.
pub(crate) fn worker_pool(misbehaviour: Option<&str>, max_workers: usize) -> WorkerPool {
    let mut command = WorkerCommand::new(TEST_WORKER);
    if let Some(misbehaviour) = misbehaviour {
        command = command.arg(misbehaviour);
    }
    WorkerPool::new(WorkerPoolConfig {
        command: Some(command),
        max_workers,
        warm_workers: 1.min(max_workers),
        ..WorkerPoolConfig::default()
    })
}

/// One pool of well-behaved test workers shared by the tests of a binary.
pub(crate) fn shared_pool() -> WorkerPool {
    static POOL: std::sync::OnceLock<WorkerPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| worker_pool(None, 8)).clone()
}

/// The test limits, with every VM in a worker process.
pub(crate) fn process_limits() -> TestLimits {
    limits().in_process(shared_pool())
}
