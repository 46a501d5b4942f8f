//! The natives the bootstrap wraps into the guest's functions (`hostCall`, `hostLocal`,
//! `hostEmit`, ...), and the bookkeeping they do in the bridge state: registering calls and
//! timers under the run's limits.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Function, Object, Value as JsValue};
use serde_json::Value;

use super::{
    BridgeState, Finish, Flags, HOST_CALL_FAILED, OUTPUT_LIMIT, TIMEOUT, TOO_MANY_PENDING, Timer,
    js_bytes, js_number, lock,
};
use crate::bytecode::{Part, load_bootstrap, load_part};
use crate::codec::{encode_host_value, json_string_bytes, output_item_bytes, parse_bridge_json};
use crate::{Limits, OutputItem, ReadingKind, RequestId};

/// What a registering native answers: the new id as a number, or the refusal as a string the
/// bootstrap throws.
fn id_or_refusal<'js>(
    ctx: Ctx<'js>,
    registered: Result<u64, String>,
) -> rquickjs::Result<JsValue<'js>> {
    match registered {
        Ok(id) => Ok(JsValue::new_number(ctx, js_number(id))),
        Err(message) => rquickjs::String::from_str(ctx, &message).map(rquickjs::String::into_value),
    }
}

/// The state the natives handed to the bootstrap capture; all of it is `Send`.
pub(super) struct Natives {
    pub(super) state: Arc<Mutex<BridgeState>>,
    pub(super) flags: Arc<Flags>,
    pub(super) limits: Limits,
}

pub(super) fn bootstrap<'js>(ctx: &Ctx<'js>, natives: Natives) -> rquickjs::Result<Object<'js>> {
    let Natives {
        state,
        flags,
        limits,
    } = natives;

    let call_state = Arc::clone(&state);
    let call_flags = Arc::clone(&flags);
    let call_limits = limits.clone();
    let host_call = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, index: u32, payload: String| {
            let registered = if call_flags.interrupt() {
                Err(TIMEOUT.to_owned())
            } else {
                register_call(&call_state, index, &payload, &call_limits)
            };
            id_or_refusal(ctx, registered)
        },
    )?;

    let local_flags = Arc::clone(&flags);
    let local_state = Arc::clone(&state);
    let max_args = limits.max_call_args_bytes;
    let host_local = Function::new(ctx.clone(), move |index: u32, payload: String| -> String {
        let answer = if local_flags.interrupt() {
            Err(TIMEOUT.to_owned())
        } else if payload.len() > max_args {
            Err(format!("code mode call arguments exceed {max_args} bytes"))
        } else {
            parse_bridge_json::<Vec<Value>>(&payload).and_then(|args| {
                let (plan, host) = {
                    let state = lock(&local_state);
                    (Arc::clone(&state.plan), state.host.clone())
                };
                match (plan.sync_request(index as usize, args), host) {
                    (Some(request), Some(host)) => {
                        catch_unwind(AssertUnwindSafe(|| host.call_sync(request)))
                            .unwrap_or_else(|_| Err(HOST_CALL_FAILED.into()))
                    }
                    _ => Err("unknown code mode function".into()),
                }
            })
        };
        match answer.and_then(encode_host_value) {
            // `[value]` on success, the message as a JSON string on failure.
            Ok(text) => format!("[{text}]"),
            Err(message) => Value::String(message).to_string(),
        }
    })?;

    // The text of a value or of a lazy root's plan, by index: texts cross into the VM only when
    // the bootstrap installs what they describe.
    let text_state = Arc::clone(&state);
    let host_text = Function::new(ctx.clone(), move |index: u32| -> Option<String> {
        let plan = Arc::clone(&lock(&text_state).plan);
        plan.text(index as usize).map(str::to_owned)
    })?;

    let emit_state = Arc::clone(&state);
    let emit_flags = Arc::clone(&flags);
    let max_output = limits.max_output_bytes;
    let host_emit = Function::new(
        ctx.clone(),
        move |is_json: bool, payload: String, over: bool| -> Option<String> {
            if emit_flags.interrupt() {
                return Some(TIMEOUT.into());
            }
            if over {
                // The bootstrap saw the item is larger than the whole budget and did not copy it.
                emit_flags.exceed_output();
                return Some(OUTPUT_LIMIT.into());
            }
            let payload_bytes = if is_json {
                payload.len()
            } else {
                json_string_bytes(&payload)
            };
            let bytes = output_item_bytes(is_json, payload_bytes);
            // Checked before parsing, so an oversized item never costs host memory.
            let total = lock(&emit_state).output_bytes.saturating_add(bytes);
            if total > max_output {
                // Sticky: the interrupt handler now stops the guest even if it catches this error.
                emit_flags.exceed_output();
                return Some(OUTPUT_LIMIT.into());
            }
            let item = if is_json {
                match parse_bridge_json::<Value>(&payload) {
                    Ok(value) => OutputItem::Json { value },
                    Err(message) => return Some(format!("json() value {message}")),
                }
            } else {
                OutputItem::Text { text: payload }
            };
            let mut state = lock(&emit_state);
            state.output_bytes = state.output_bytes.saturating_add(bytes);
            state.output.push(item);
            None
        },
    )?;

    let yield_state = Arc::clone(&state);
    let host_yield = Function::new(ctx.clone(), move || -> f64 {
        let mut state = lock(&yield_state);
        let id = state.next_id;
        state.next_id += 1;
        state.yields.push(id);
        state.yield_requested = true;
        tracing::debug!(target: "codemode_sandbox", "guest yielded");
        js_number(id)
    })?;

    let finish_state = Arc::clone(&state);
    let host_finish = Function::new(
        ctx.clone(),
        move |ok: bool, payload: String, flag: bool, original_bytes: f64| {
            let mut state = lock(&finish_state);
            if state.finish.is_none() {
                state.finish = Some(if ok && flag {
                    Finish::TooLarge
                } else if ok {
                    #[allow(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "a byte count the bootstrap measured; 0 means not cut"
                    )]
                    let original = (original_bytes >= 1.0).then_some(original_bytes as usize);
                    Finish::Value(payload, original)
                } else {
                    Finish::Error {
                        message: payload,
                        looks_like_oom: flag,
                    }
                });
            }
        },
    )?;

    let timer_state = Arc::clone(&state);
    let timer_flags = Arc::clone(&flags);
    let max_timers = limits
        .max_pending_calls
        .max(1)
        .saturating_add(limits.max_queued_calls);
    let host_timer = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, delay_ms: f64, repeat: bool| {
            let registered = if timer_flags.interrupt() {
                Err(TIMEOUT.to_owned())
            } else {
                register_timer(&timer_state, delay_ms, repeat, max_timers)
            };
            id_or_refusal(ctx, registered)
        },
    )?;
    let clear_state = Arc::clone(&state);
    let host_clear_timer = Function::new(ctx.clone(), move |id: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "ids are positive integers the host handed out"
        )]
        let id = id as u64;
        lock(&clear_state).timers.remove(&id);
    })?;

    let remaining_state = Arc::clone(&state);
    let max_output_bytes = limits.max_output_bytes;
    let host_output_remaining = Function::new(ctx.clone(), move || -> f64 {
        let used = lock(&remaining_state).output_bytes;
        js_bytes(max_output_bytes.saturating_sub(used))
    })?;

    let poll_flags = Arc::clone(&flags);
    // A poll point for built-ins whose native loops never reach the interrupt handler: `true`
    // once the run must stop (deadline passed or output exceeded). The flags stay tripped, so
    // the run ends even if the guest catches the error the bootstrap throws.
    let host_poll = Function::new(ctx.clone(), move || poll_flags.interrupt())?;

    let make_control: Function<'js> = load_bootstrap(ctx)?;
    // A dense array needs at least 8 bytes per element, so any longer array-like must be sparse.
    let max_scan = js_bytes((limits.memory_bytes / 8).max(1 << 20));
    // More natives than a Rust tuple carries: handed over as one plain object the bootstrap
    // destructures before any guest code runs.
    let natives = Object::new(ctx.clone())?;
    natives.set("hostCall", host_call)?;
    natives.set("hostLocal", host_local)?;
    natives.set("hostText", host_text)?;
    natives.set("hostEmit", host_emit)?;
    natives.set("hostYield", host_yield)?;
    natives.set("hostFinish", host_finish)?;
    natives.set("hostPoll", host_poll)?;
    natives.set("hostTimer", host_timer)?;
    natives.set("hostOutputRemaining", host_output_remaining)?;
    natives.set("hostClearTimer", host_clear_timer)?;
    // Used only when the run's host has a tape (`install` then reads the guest's `Date`,
    // `Math.random` and `performance.now` through it); the tape is bound when a run claims the VM.
    let reading_state = Arc::clone(&state);
    let host_reading = Function::new(ctx.clone(), move |kind: u32, live: f64| -> f64 {
        let tape = lock(&reading_state).tape.clone();
        match (tape, ReadingKind::from_number(kind)) {
            (Some(tape), Some(kind)) => tape.reading(kind, live),
            _ => live,
        }
    })?;
    natives.set("hostReading", host_reading)?;
    // Called by the bootstrap's `install`, before any guest code, to defer the runtime globals.
    let host_defer = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>,
         factory: Function<'js>,
         holder: Object<'js>,
         names: rquickjs::Array<'js>| {
            crate::deferred::defer(&ctx, factory, holder, names)
        },
    )?;
    natives.set("hostDefer", host_defer)?;
    // Called by the bootstrap, before any guest code, with the hook that captures what the
    // runtime globals use of the families of built-ins made on first use; and before it loads
    // those globals.
    let host_intrinsics = Function::new(ctx.clone(), |ctx: Ctx<'js>, hook: Function<'js>| {
        crate::deferred::on_intrinsics(&ctx, hook)
    })?;
    natives.set("hostIntrinsics", host_intrinsics)?;
    let host_make_intrinsics = Function::new(ctx.clone(), |ctx: Ctx<'js>, families: u32| {
        crate::deferred::make_intrinsics(&ctx, families)
    })?;
    natives.set("hostMakeIntrinsics", host_make_intrinsics)?;
    // Loads a part of the bootstrap into this VM on first use (bytecode.rs `Part`); the bootstrap
    // keeps what it returns, and calls again only if loading failed (the guest's memory ran out).
    let host_part = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, index: u32| match Part::from_index(index) {
            Some(part) if part != Part::Core => load_part(&ctx, part),
            _ => Err(rquickjs::Error::Unknown),
        },
    )?;
    natives.set("hostPart", host_part)?;
    natives.set("maxCallArgs", js_bytes(limits.max_call_args_bytes))?;
    natives.set("maxOutput", js_bytes(limits.max_output_bytes))?;
    let control: Object<'js> = make_control.call((natives, max_scan))?;
    // `settle` runs once per host answer: kept apart (the runtime's only `Function` userdata,
    // read by engine.rs `settle_function`), so settling looks no property up.
    let settle: Function<'js> = control.get("settle")?;
    ctx.store_userdata(settle)
        .map_err(|_| rquickjs::Error::Unknown)?;
    ctx.store_userdata(control.clone())
        .map_err(|_| rquickjs::Error::Unknown)?;
    Ok(control)
}

/// Registers a timer due `delay_ms` from now; returns its id or the guest-visible refusal.
fn register_timer(
    state: &Mutex<BridgeState>,
    delay_ms: f64,
    repeat: bool,
    max_timers: usize,
) -> Result<u64, String> {
    let mut state = lock(state);
    if state.timers.len() >= max_timers {
        return Err(format!(
            "too many pending code mode timers (at most {max_timers})"
        ));
    }
    let delay = Duration::from_secs_f64((delay_ms / 1000.0).clamp(0.0, 2_147_483.647));
    let now = Instant::now();
    let id = state.next_id;
    state.next_id += 1;
    state.timers.insert(
        id,
        Timer {
            due: now.checked_add(delay).unwrap_or(now),
            seq: id,
            // A zero period would spin: intervals repeat at least a millisecond apart.
            period: repeat.then(|| delay.max(Duration::from_millis(1))),
        },
    );
    Ok(id)
}

/// Validates and queues one bridge call; returns its id or the guest-visible refusal.
///
/// The payload is refused by size before it is parsed, and parsed exactly once; the parsed
/// request is moved, never cloned, into the host call.
fn register_call(
    state: &Mutex<BridgeState>,
    index: u32,
    payload: &str,
    limits: &Limits,
) -> Result<u64, String> {
    let max_args = limits.max_call_args_bytes;
    if payload.len() > max_args {
        return Err(format!("code mode call arguments exceed {max_args} bytes"));
    }
    let budget = limits.max_in_flight_args_bytes();
    // Calls in flight plus calls waiting in the queue.
    let capacity = limits
        .max_pending_calls
        .max(1)
        .saturating_add(limits.max_queued_calls);
    {
        let state = lock(state);
        if state.in_flight.len() + state.queued.len() >= capacity {
            return Err(TOO_MANY_PENDING.into());
        }
        if state.args_bytes.saturating_add(payload.len()) > budget {
            return Err(format!(
                "code mode calls in flight would hold more than {budget} bytes of arguments"
            ));
        }
    }
    let args = parse_bridge_json::<Vec<Value>>(payload)?;
    let mut state = lock(state);
    if state.in_flight.len() + state.queued.len() >= capacity {
        return Err(TOO_MANY_PENDING.into());
    }
    let id = state.next_id;
    let Some(request) = state
        .plan
        .bridge_request(index as usize, RequestId(id), args)
    else {
        return Err("unknown code mode function".into());
    };
    state.next_id += 1;
    state.args_bytes = state.args_bytes.saturating_add(payload.len());
    state.queued.push_back((request, payload.len()));
    Ok(id)
}
