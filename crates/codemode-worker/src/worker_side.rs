//! The worker's side: a process that serves steps on its stdin and stdout, one run at a time,
//! each run in a fresh VM.
//!
//! Start-up: the lockdown's start-up part (descriptors, resource limits), a VM thread with the
//! stack VM threads have in-process, a warm-up VM built, run and dropped (so the bootstrap's
//! bytecode exists and every lazy initialisation is done), the system-call filter, then a
//! greeting. From then on the worker reads steps and answers them; the guest's host calls and
//! synchronous calls become requests to the host, answered before the step goes on.

use std::io::{Stdin, Stdout};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;

use super::lockdown::{self, Settings};
use super::protocol::{
    Done, FailureWire, HostRequest, MAX_HOST_FRAME_BYTES, PROTOCOL_VERSION, ProgressWire,
    WorkerMessage, nanos, read_frame, write_frame,
};
use crate::engine::{Engine, Flags, Progress, StepInput, StepOutput};
use crate::install::InstallPlan;
use crate::{BridgeHost, BridgeRequest, Limits, ReadingKind, RequestId, RunError, Tape};
use codemode_engine::VM_THREAD_STACK_BYTES;

/// The worker's `main`: serves steps on stdin and stdout until the host closes stdin. The
/// `codemode-worker` binary is this function; the `codemode` command calls it for its hidden
/// `worker` subcommand.
///
/// Exit status: 0 when the host closed the pipe, 1 on a broken protocol or a failed start-up.
pub fn serve_worker() -> ExitCode {
    serve(None)
}

/// Test-only misbehaviours of `codemode-test-worker` (codemode-sandbox's tests). Not part of the
/// API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Answers the first step with a frame that is not JSON.
    Garbage,
    /// Answers the first step with a frame header announcing 4 GiB, then writes without end.
    Flood,
    /// Reads the first step and never answers.
    Stall,
    /// Locked down like a real worker, tries to `open()` a file at the first step.
    OpenFile,
    /// Asks the host for a reading of the clock, though the run has no tape.
    ReadingWithoutTape,
    /// Reports the settling of a call the host never settled.
    SettlingUnknown,
    /// Locked down like a real worker, dies of `SIGSEGV` at the first step (through the
    /// runtime's fault handler, as a fault in the engine would).
    Segfault,
    /// The same with `SIGBUS`.
    BusError,
    /// Locked down like a real worker, overflows its stack at the first step.
    StackOverflow,
    /// Not a misbehaviour of a step: frees a block glibc mapped on its own (8 MiB) after the
    /// warm-up, before the system-call filter, then serves every step as a real worker. Such a
    /// free raises glibc's trim threshold, which once kept the filter's priming from working.
    LargeFreeBeforeFilter,
}

impl Misbehaviour {
    /// The misbehaviour named by a test worker's first argument.
    pub fn from_arg(arg: &str) -> Option<Self> {
        match arg {
            "garbage" => Some(Self::Garbage),
            "flood" => Some(Self::Flood),
            "stall" => Some(Self::Stall),
            "open-file" => Some(Self::OpenFile),
            "reading-without-tape" => Some(Self::ReadingWithoutTape),
            "settling-unknown" => Some(Self::SettlingUnknown),
            "segfault" => Some(Self::Segfault),
            "bus-error" => Some(Self::BusError),
            "stack-overflow" => Some(Self::StackOverflow),
            "large-free-before-filter" => Some(Self::LargeFreeBeforeFilter),
            _ => None,
        }
    }
}

/// The worker of codemode-sandbox's tests, misbehaving at its first step. Not part of the API.
#[doc(hidden)]
pub fn serve_misbehaving_worker(misbehaviour: Option<Misbehaviour>) -> ExitCode {
    serve(misbehaviour)
}

fn serve(misbehaviour: Option<Misbehaviour>) -> ExitCode {
    let settings = Settings::from_args(std::env::args_os());
    let started = lockdown::start_up(settings);
    // Without the handler a stop signal kills the worker: the run still ends, without the
    // output of the step it was in.
    let _ = lockdown::handle_stop_signal();
    let thread = std::thread::Builder::new()
        .name("codemode-worker-vm".into())
        .stack_size(VM_THREAD_STACK_BYTES)
        .spawn(move || serve_on_vm_thread(started.is_ok(), misbehaviour));
    match thread.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        _ => ExitCode::FAILURE,
    }
}

/// The worker's two pipes, shared by the serving loop and the stand-ins of host calls and local
/// functions (all on the one VM thread; the lock is never contended).
struct Channel {
    pipes: Mutex<Pipes>,
}

struct Pipes {
    stdin: Stdin,
    stdout: Stdout,
    buffer: Vec<u8>,
}

impl Channel {
    fn pipes(&self) -> std::sync::MutexGuard<'_, Pipes> {
        self.pipes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, message: &WorkerMessage) {
        let mut pipes = self.pipes();
        let Pipes { stdout, buffer, .. } = &mut *pipes;
        if write_frame(stdout, buffer, message).is_err() {
            // The host is gone: nothing is left to do.
            std::process::exit(0);
        }
    }

    fn receive(&self) -> HostRequest {
        let mut pipes = self.pipes();
        let Pipes { stdin, buffer, .. } = &mut *pipes;
        match read_frame(stdin, buffer, MAX_HOST_FRAME_BYTES) {
            Ok(request) => request,
            // Closed: the host is done with this worker. Anything else: a host of another
            // version; either way this process has nothing left to do.
            Err(_) => std::process::exit(0),
        }
    }

    /// A request to the host and its answer, within a step.
    fn ask(&self, message: &WorkerMessage) -> HostRequest {
        self.send(message);
        self.receive()
    }
}

/// The host side of the bridge, as seen from a worker: each call is a round trip to the host,
/// which either answers at once or says the call is pending (a later step settles it). Made per
/// run: `tape` is set when the host said the run has one.
struct PipeHost {
    channel: Arc<Channel>,
    tape: Option<Arc<PipeTape>>,
}

impl PipeHost {
    fn new(channel: &Arc<Channel>, tape: bool) -> Self {
        Self {
            channel: Arc::clone(channel),
            tape: tape.then(|| Arc::new(PipeTape(Arc::clone(channel)))),
        }
    }
}

/// The run's tape, as seen from a worker: every question is a round trip to the host's tape.
/// Asked on the VM thread within a step, like the host's own tape would be.
#[derive(Debug)]
struct PipeTape(Arc<Channel>);

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").finish_non_exhaustive()
    }
}

impl Tape for PipeTape {
    fn reading(&self, kind: ReadingKind, live: f64) -> f64 {
        let kind = kind.number();
        match self.0.ask(&WorkerMessage::Reading { kind, live }) {
            HostRequest::ReadingAnswer(seen) => seen,
            _ => std::process::exit(1),
        }
    }

    fn settling(&self, id: RequestId) {
        self.0.send(&WorkerMessage::Settling(id.0));
    }

    fn next_timer(&self, due: Option<u64>, registered: &dyn Fn(u64) -> bool) -> Option<u64> {
        self.0.send(&WorkerMessage::NextTimer { due });
        loop {
            match self.0.receive() {
                HostRequest::IsTimer(id) => {
                    self.0.send(&WorkerMessage::TimerRegistered(registered(id)));
                }
                HostRequest::TimerChoice(choice) => return choice,
                _ => std::process::exit(1),
            }
        }
    }

    fn abort(&self) -> Option<String> {
        match self.0.ask(&WorkerMessage::Abort) {
            HostRequest::AbortAnswer(message) => message,
            _ => std::process::exit(1),
        }
    }
}

#[async_trait::async_trait]
impl BridgeHost for PipeHost {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        match self.channel.ask(&WorkerMessage::Call(request)) {
            HostRequest::CallAnswer(Some(outcome)) => outcome,
            HostRequest::CallAnswer(None) => std::future::pending().await,
            _ => std::process::exit(1),
        }
    }

    /// A synchronous call: a round trip to the host, answered before the step goes on.
    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        match self.channel.ask(&WorkerMessage::Sync(request)) {
            HostRequest::SyncAnswer(outcome) => outcome,
            _ => std::process::exit(1),
        }
    }

    fn tape(&self) -> Option<Arc<dyn Tape>> {
        self.tape.clone().map(|tape| tape as Arc<dyn Tape>)
    }
}

/// Builds, runs and drops one VM, so everything done once per process is done before the
/// system-call filter is installed.
fn warm_up() {
    struct NoHost;
    #[async_trait::async_trait]
    impl BridgeHost for NoHost {
        async fn call(&self, _request: BridgeRequest) -> Result<Value, String> {
            Err("no host".into())
        }
    }
    let plan = InstallPlan::empty();
    let flags = Arc::new(Flags::new());
    flags.set_deadline(Instant::now() + std::time::Duration::from_secs(5));
    let program = "const o = { a: [1, 'x'] }; text(JSON.stringify(o)); return o";
    let built = Engine::build(
        program,
        plan,
        Limits::default(),
        Arc::new(NoHost),
        flags,
        None,
    );
    if let Ok(mut engine) = built {
        drop(engine.step(StepInput {
            settlements: Vec::new(),
            resume_yields: false,
            handle: None,
        }));
    }
    // The engine's warm-up threads (its probe, and compiling any part of the bootstrap that
    // does not ship as bytecode) end before the system-call filter: a thread still starting or
    // ending then would make calls it forbids (`rseq`, `sched_getaffinity`), and one could not
    // start later.
    codemode_engine::finish_warming_up();
}

fn serve_on_vm_thread(started: bool, misbehaviour: Option<Misbehaviour>) -> ExitCode {
    warm_up();
    if misbehaviour == Some(Misbehaviour::LargeFreeBeforeFilter) {
        drop(std::hint::black_box(vec![1_u8; 8 << 20]));
    }
    let misbehaviour = misbehaviour.filter(|m| *m != Misbehaviour::LargeFreeBeforeFilter);
    let locked_down = started && lockdown::seccomp().is_ok();
    let channel = Arc::new(Channel {
        pipes: Mutex::new(Pipes {
            stdin: std::io::stdin(),
            stdout: std::io::stdout(),
            buffer: Vec::new(),
        }),
    });
    channel.send(&WorkerMessage::Hello {
        protocol: PROTOCOL_VERSION,
        locked_down,
    });
    let mut engine: Option<Box<Engine>> = None;
    loop {
        let HostRequest::Step {
            build,
            settlements,
            resume_yields,
            remaining_nanos,
            stop_baseline,
        } = channel.receive()
        else {
            // An answer outside a request: the host broke the protocol.
            return ExitCode::FAILURE;
        };
        if let Some(misbehaviour) = misbehaviour {
            misbehave(misbehaviour, &channel);
        }
        let deadline = super::protocol::instant_in(remaining_nanos);
        if let Some(build) = build {
            let build = *build;
            // Never reused: a run's VM is dropped before the next run's is built.
            engine = None;
            let flags = Arc::new(Flags::new());
            flags.set_deadline(deadline);
            flags.set_stop_baseline(stop_baseline);
            let plan = Arc::new(InstallPlan::from_wire(build.plan));
            let host: Arc<dyn BridgeHost> = Arc::new(PipeHost::new(&channel, build.tape));
            match Engine::build(&build.program, plan, build.limits, host, flags, None) {
                Ok(built) => engine = Some(Box::new(built)),
                Err(error) => {
                    channel.send(&done(StepOutput::failed(error), None));
                    continue;
                }
            }
        }
        let Some(current) = engine.as_mut() else {
            channel.send(&done(StepOutput::failed(RunError::Finished), None));
            continue;
        };
        // The frame's deadline reaches the VM one way, as in the host: through its flags.
        current.flags().set_deadline(deadline);
        current.flags().set_stop_baseline(stop_baseline);
        let answer = current.step(StepInput {
            settlements,
            resume_yields,
            handle: None,
        });
        let alive = matches!(answer.progress, Progress::Idle | Progress::Yielded);
        channel.send(&done(answer, Some(current)));
        if !alive {
            // Torn down after the answer went out, off the host's path.
            engine = None;
        }
    }
}

/// The `Done` message of a step.
fn done(answer: StepOutput, engine: Option<&Engine>) -> WorkerMessage {
    let StepOutput {
        progress,
        spawn,
        output,
        next_timer,
    } = answer;
    // Pending host calls are the host's to run; their stand-ins here never finish.
    drop(spawn);
    let alive = matches!(progress, Progress::Idle | Progress::Yielded);
    let progress = match progress {
        Progress::Completed(value, truncated) => ProgressWire::Completed { value, truncated },
        Progress::Failed(error) => ProgressWire::Failed(FailureWire::from(error)),
        Progress::Yielded => ProgressWire::Yielded,
        Progress::Idle => ProgressWire::Idle,
    };
    let now = Instant::now();
    WorkerMessage::Done(Box::new(Done {
        progress,
        output,
        next_timer_nanos: next_timer.map(|due| nanos(due.saturating_duration_since(now))),
        pending: match engine {
            Some(engine) if alive => engine.pending_calls(),
            _ => Vec::new(),
        },
        memory_bytes: engine.map_or(0, |e| u64::try_from(e.memory_bytes()).unwrap_or(u64::MAX)),
        output_bytes: engine.map_or(0, |e| u64::try_from(e.output_bytes()).unwrap_or(u64::MAX)),
        peak_rss_bytes: lockdown::peak_rss_bytes(),
    }))
}

/// What a misbehaving test worker does instead of answering its first step; never returns.
fn misbehave(misbehaviour: Misbehaviour, channel: &Channel) -> ! {
    use std::io::Write;
    let mut pipes = channel.pipes();
    match misbehaviour {
        Misbehaviour::Garbage => {
            let text = b"this is not a message";
            let length = u32::try_from(text.len()).unwrap_or(0).to_le_bytes();
            let _ = pipes.stdout.write_all(&length);
            let _ = pipes.stdout.write_all(text);
            let _ = pipes.stdout.flush();
            // Waits for the host to close the pipe.
            drop(pipes);
            let _ = channel.receive();
            std::process::exit(0)
        }
        Misbehaviour::Flood => {
            let _ = pipes.stdout.write_all(&u32::MAX.to_le_bytes());
            let chunk = vec![b'x'; 64 * 1024];
            while pipes.stdout.write_all(&chunk).is_ok() {}
            std::process::exit(0)
        }
        Misbehaviour::Stall => {
            // Blocks on its pipe until the host kills it.
            drop(pipes);
            let _ = channel.receive();
            std::process::exit(0)
        }
        Misbehaviour::ReadingWithoutTape | Misbehaviour::SettlingUnknown => {
            drop(pipes);
            channel.send(&if misbehaviour == Misbehaviour::ReadingWithoutTape {
                WorkerMessage::Reading {
                    kind: ReadingKind::Clock.number(),
                    live: 0.0,
                }
            } else {
                WorkerMessage::Settling(999)
            });
            // Waits for the host to close the pipe.
            let _ = channel.receive();
            std::process::exit(0)
        }
        Misbehaviour::OpenFile => {
            // With the filter installed this kills the process with SIGSYS; without it, the
            // host sees garbage instead of a step's answer.
            let opened = std::fs::File::open("/dev/null").is_ok();
            let text = if opened {
                "opened a file"
            } else {
                "open failed"
            };
            let length = u32::try_from(text.len()).unwrap_or(0).to_le_bytes();
            let _ = pipes.stdout.write_all(&length);
            let _ = pipes.stdout.write_all(text.as_bytes());
            let _ = pipes.stdout.flush();
            std::process::exit(0)
        }
        Misbehaviour::Segfault => lockdown::die_of_fault(lockdown::Fault::Segmentation),
        Misbehaviour::BusError => lockdown::die_of_fault(lockdown::Fault::Bus),
        Misbehaviour::StackOverflow => {
            drop(pipes);
            overflow_the_stack(0);
            std::process::exit(0)
        }
        // Acted on before the filter; `serve_on_vm_thread` never passes it here.
        Misbehaviour::LargeFreeBeforeFilter => std::process::exit(1),
    }
}

/// Recurses until the stack's guard page stops it (the runtime then aborts the process).
fn overflow_the_stack(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if std::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    overflow_the_stack(depth + 1).wrapping_add(frame[0])
}
