//! One step of a run whose VM lives in a worker: the host writes the step, then answers the
//! worker's host calls, synchronous calls and tape questions until the worker says the step is
//! done, checking everything the worker says against the run's limits.

use super::*;

/// The host's knowledge of a run whose VM lives in a worker.
pub(super) struct RunSide {
    host: Arc<dyn BridgeHost>,
    limits: Limits,
    /// Methods of the plan's bridge callables: a worker asking for another is lying.
    methods: HashSet<String>,
    /// Methods of the plan's synchronous callables.
    sync_methods: HashSet<String>,
    /// Largest frame accepted from the worker during this run.
    frame_limit: usize,
    /// Started host calls not settled into the VM yet, with their frame bytes.
    in_flight: HashMap<u64, usize>,
    in_flight_bytes: usize,
    pub(super) output_bytes: usize,
    pub(super) memory_bytes: usize,
    pub(super) pending: Vec<PendingCall>,
    /// The run's tape (tape.rs), asked on the worker's behalf.
    tape: Option<Arc<dyn Tape>>,
}

impl RunSide {
    pub(super) fn new(plan: &InstallPlan, host: Arc<dyn BridgeHost>, limits: &Limits) -> Self {
        let longest = plan
            .bridge
            .iter()
            .chain(&plan.sync)
            .map(|(method, bound)| {
                method.len() + serde_json::to_vec(bound).map_or(0, |bytes| bytes.len())
            })
            .max()
            .unwrap_or(0);
        let calls = limits
            .max_pending_calls
            .max(1)
            .saturating_add(limits.max_queued_calls)
            .saturating_add(1);
        // One call's arguments, or the output and the value of a step with its pending list.
        let frame_limit = limits
            .max_call_args_bytes
            .max(
                limits
                    .max_output_bytes
                    .saturating_mul(2)
                    .saturating_add(calls.saturating_mul(longest.saturating_add(64))),
            )
            .saturating_add(longest)
            .saturating_add(1 << 20);
        Self {
            tape: host.tape(),
            host,
            limits: limits.clone(),
            methods: plan
                .bridge
                .iter()
                .map(|(method, _)| method.clone())
                .collect(),
            sync_methods: plan.sync.iter().map(|(method, _)| method.clone()).collect(),
            frame_limit,
            in_flight: HashMap::new(),
            in_flight_bytes: 0,
            output_bytes: 0,
            memory_bytes: 0,
            pending: Vec::new(),
        }
    }
}

/// Writes the step and answers the worker until it says the step is done.
pub(super) fn exchange(
    worker: &mut Worker,
    run: &mut RunSide,
    build: Option<(&str, &InstallPlan)>,
    input: StepInput,
    deadline: Instant,
    stop: &WorkerStop,
) -> Result<(Done, Vec<(u64, HostFuture)>), Fault> {
    let StepInput {
        settlements,
        resume_yields,
        handle,
    } = input;
    let _entered = handle.as_ref().map(tokio::runtime::Handle::enter);
    if !worker.greeted {
        match worker.read(MAX_HELLO_BYTES)? {
            WorkerMessage::Hello {
                protocol,
                locked_down,
            } if protocol == PROTOCOL_VERSION => {
                worker.greeted = true;
                worker.locked_down = locked_down;
            }
            WorkerMessage::Hello { protocol, .. } => {
                return Err(Fault::Malformed(format!(
                    "protocol version {protocol}, expected {PROTOCOL_VERSION}"
                )));
            }
            _ => return Err(Fault::Malformed("no greeting".into())),
        }
    }
    for (id, _) in &settlements {
        if let Some(bytes) = run.in_flight.remove(id) {
            run.in_flight_bytes = run.in_flight_bytes.saturating_sub(bytes);
        }
    }
    let message = HostMessage::Step {
        build: build.map(|(program, plan)| BuildRef {
            program,
            plan: plan.wire(),
            limits: &run.limits,
            tape: run.tape.is_some(),
        }),
        settlements: &settlements,
        resume_yields,
        remaining_nanos: nanos(deadline.saturating_duration_since(Instant::now())),
        stop_baseline: worker.process.stop_signals.load(Ordering::SeqCst),
    };
    worker.write(&message)?;
    stop.frame_sent(&worker.process);
    // Each settled answer may be reported to the tape once, in the order the VM settles it.
    let mut settling: HashSet<u64> = settlements.iter().map(|(id, _)| *id).collect();
    drop(settlements);
    let mut spawn = Vec::new();
    loop {
        match worker.read(run.frame_limit)? {
            WorkerMessage::Reading { kind, live } => {
                let (Some(tape), Some(kind)) = (&run.tape, ReadingKind::from_number(kind)) else {
                    return Err(Fault::Malformed("a reading the run does not record".into()));
                };
                let seen =
                    catch_unwind(AssertUnwindSafe(|| tape.reading(kind, live))).unwrap_or(live);
                worker.write(&HostMessage::ReadingAnswer(seen))?;
            }
            WorkerMessage::Settling(id) => {
                let (Some(tape), true) = (&run.tape, settling.remove(&id)) else {
                    return Err(Fault::Malformed(format!(
                        "settling call {id}, which this step did not settle"
                    )));
                };
                let _ = catch_unwind(AssertUnwindSafe(|| tape.settling(RequestId(id))));
            }
            WorkerMessage::NextTimer { due } => {
                let Some(tape) = run.tape.clone() else {
                    return Err(Fault::Malformed("a timer question without a tape".into()));
                };
                let choice = next_timer(worker, run.frame_limit, tape.as_ref(), due)?;
                worker.write(&HostMessage::TimerChoice(choice))?;
            }
            WorkerMessage::Abort => {
                let Some(tape) = &run.tape else {
                    return Err(Fault::Malformed("an abort question without a tape".into()));
                };
                let message = catch_unwind(AssertUnwindSafe(|| tape.abort())).unwrap_or(None);
                worker.write(&HostMessage::AbortAnswer(message))?;
            }
            WorkerMessage::TimerRegistered(_) => {
                return Err(Fault::Malformed("an answer nobody asked for".into()));
            }
            WorkerMessage::Sync(request) => {
                if !run.sync_methods.contains(&request.method) {
                    return Err(Fault::Malformed(
                        "a synchronous call of an unknown method".into(),
                    ));
                }
                let host = Arc::clone(&run.host);
                let answer = catch_unwind(AssertUnwindSafe(|| host.call_sync(request)))
                    .unwrap_or_else(|_| Err(HOST_CALL_FAILED.to_owned()));
                worker.write(&HostMessage::SyncAnswer(bounded(answer)))?;
            }
            WorkerMessage::Call(request) => {
                let id = request.id.0;
                if !run.methods.contains(&request.method) {
                    return Err(Fault::Malformed("a call of an unknown method".into()));
                }
                if run.in_flight.contains_key(&id) {
                    return Err(Fault::Malformed(format!("call id {id} used twice")));
                }
                let bytes = worker.buffer.len();
                let host = Arc::clone(&run.host);
                let mut future: HostFuture = Box::pin(async move { host.call(request).await });
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                let answer =
                    match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut context))) {
                        Ok(Poll::Ready(outcome)) => Some(bounded(outcome)),
                        Ok(Poll::Pending) => None,
                        Err(_) => Some(Err(HOST_CALL_FAILED.to_owned())),
                    };
                if answer.is_some() {
                    // Answered at once: the VM settles it within this step.
                    settling.insert(id);
                } else {
                    let max_calls = run.limits.max_pending_calls.max(1);
                    let max_bytes = run
                        .limits
                        .max_in_flight_args_bytes()
                        .saturating_add(max_calls.saturating_mul(64 * 1024));
                    if run.in_flight.len() >= max_calls
                        || run.in_flight_bytes.saturating_add(bytes) > max_bytes
                    {
                        return Err(Fault::Malformed(
                            "more host calls in flight than the run's limits allow".into(),
                        ));
                    }
                    run.in_flight.insert(id, bytes);
                    run.in_flight_bytes += bytes;
                    spawn.push((id, future));
                }
                worker.write(&HostMessage::CallAnswer(answer))?;
            }
            WorkerMessage::Done(done) => {
                check_done(run, &done)?;
                worker.peak_rss_bytes = done.peak_rss_bytes;
                return Ok((*done, spawn));
            }
            WorkerMessage::Hello { .. } => {
                return Err(Fault::Malformed("a second greeting".into()));
            }
        }
    }
}

/// Asks the run's tape which timer fires now; the tape's questions about which timers are
/// pending go to the worker, whose VM holds them.
fn next_timer(
    worker: &mut Worker,
    frame_limit: usize,
    tape: &dyn Tape,
    due: Option<u64>,
) -> Result<Option<u64>, Fault> {
    let worker = std::cell::RefCell::new(worker);
    let fault = std::cell::RefCell::new(None);
    let registered = |id: u64| -> bool {
        if fault.borrow().is_some() {
            return false;
        }
        let mut worker = worker.borrow_mut();
        let answer = worker
            .write(&HostMessage::IsTimer(id))
            .and_then(|()| worker.read(frame_limit));
        match answer {
            Ok(WorkerMessage::TimerRegistered(registered)) => registered,
            Ok(_) => {
                *fault.borrow_mut() =
                    Some(Fault::Malformed("no answer to a timer question".into()));
                false
            }
            Err(error) => {
                *fault.borrow_mut() = Some(error);
                false
            }
        }
    };
    let choice =
        catch_unwind(AssertUnwindSafe(|| tape.next_timer(due, &registered))).unwrap_or(None);
    match fault.into_inner() {
        Some(error) => Err(error),
        None => Ok(choice),
    }
}

/// A host value that may cross to the worker: nested no deeper than the bridge allows (else the
/// error the in-process bridge gives).
fn bounded(outcome: Result<Value, String>) -> Result<Value, String> {
    match outcome {
        Ok(value) if crate::codec::exceeds_depth(&value, MAX_JSON_DEPTH) => {
            Err(encode_host_value(value)
                .err()
                .unwrap_or_else(|| HOST_CALL_FAILED.to_owned()))
        }
        other => other,
    }
}

/// Checks what the worker says about its step against the run's limits, and records it.
fn check_done(run: &mut RunSide, done: &Done) -> Result<(), Fault> {
    let added: usize = done.output.iter().map(output_bytes).sum();
    let total = run.output_bytes.saturating_add(added);
    if total > run.limits.max_output_bytes {
        return Err(Fault::Malformed(
            "more output than the run's output limit".into(),
        ));
    }
    let calls = run
        .limits
        .max_pending_calls
        .max(1)
        .saturating_add(run.limits.max_queued_calls);
    if done.pending.len() > calls {
        return Err(Fault::Malformed(
            "more pending calls than the run's limits allow".into(),
        ));
    }
    run.output_bytes = total;
    run.memory_bytes = usize::try_from(done.memory_bytes).unwrap_or(usize::MAX);
    run.pending.clone_from(&done.pending);
    Ok(())
}
