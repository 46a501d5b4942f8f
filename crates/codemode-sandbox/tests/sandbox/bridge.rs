//! The JSON bridge under hostile guests: prototype pollution, getters, Proxy traps, tampering,
//! forged internals and floods of calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{TestHost, check, limits, render, run_with, runtime};
use codemode_sandbox::{DEADLINE_GRACE, LegEnd, OutputItem};

#[test]
fn results_take_safe_json_fallbacks() {
    // json(), text() of non-strings and the return value never fail on what JSON cannot hold.
    check(
        "const a = { n: 1 }; a.self = a; json(a); json([a, a]); return 1",
        r#"completed 1 output=[{"type":"json","value":{"n":1,"self":"[Circular]"}},{"type":"json","value":[{"n":1,"self":"[Circular]"},{"n":1,"self":"[Circular]"}]}]"#,
    );
    check(
        "json({ keep: 1, n: 1n, f() {}, u: undefined, s: Symbol('s') }); json([() => 1, undefined, Symbol('x'), 2]); return 1",
        r#"completed 1 output=[{"type":"json","value":{"keep":1,"n":"1"}},{"type":"json","value":[null,null,null,2]}]"#,
    );
    check(
        "text(() => 1); text({ e: new TypeError('bad') }); return 1",
        r#"completed 1 output=[{"type":"text","text":"null"},{"type":"text","text":"{\"e\":{\"name\":\"TypeError\",\"message\":\"bad\"}}"}]"#,
    );
    check(
        "json(undefined); json(NaN); json(new Date(0)); return 1",
        r#"completed 1 output=[{"type":"json","value":null},{"type":"json","value":null},{"type":"json","value":"1970-01-01T00:00:00.000Z"}]"#,
    );
    check(
        "return { a: 1, f: () => 1, big: 2n ** 70n, err: new RangeError('r'), list: [undefined, () => 1] }",
        r#"completed {"a":1,"big":"1180591620717411303424","err":{"message":"r","name":"RangeError"},"list":[null,null]}"#,
    );
    check(
        "let v = 1; for (let i = 0; i < 200; i++) v = [v]; json(v); return 1",
        &format!(
            r#"completed 1 output=[{{"type":"json","value":{}"[Too deep]"{}}}]"#,
            "[".repeat(100),
            "]".repeat(100)
        ),
    );
    check(
        "return { get x() { throw new Error('late') }, y: 1 }",
        r#"completed {"x":"[Unserializable]","y":1}"#,
    );
    // Values sent *to* the host keep the strict, catchable errors.
    check(
        "const a = []; a.push(a); await host.echo(a)",
        "failed - TypeError: circular reference",
    );
    check(
        "try { await host.echo({ n: 1n }) } catch (e) { return e.message }",
        r#"completed "a BigInt cannot cross the code mode bridge""#,
    );
    check(
        "try { await host.echo({ f() {} }) } catch (e) { return e.message }",
        r#"completed "a function cannot cross the code mode bridge""#,
    );
}

#[test]
fn settled_json_cannot_pollute_prototypes() {
    check(
        "const r = await host.proto(); \
         return [Object.keys(r), Object.getPrototypeOf(r) === Object.prototype, ({}).polluted === undefined, \
                 r.__proto__.polluted, typeof r.constructor, Object.prototype.polluted === undefined]",
        r#"completed [["__proto__","constructor","ok"],true,true,true,"object",true]"#,
    );
    check(
        "const r = await tools.search({ ['__proto__']: { polluted: 1 } }); return [({}).polluted, Object.keys(r.query)]",
        r#"completed [null,["__proto__"]]"#,
    );
}

#[test]
fn host_values_too_deep_reject_in_the_guest() {
    check(
        "try { await host.deep() } catch (e) { return e.message }",
        r#"completed "the host value nests deeper than 128 levels""#,
    );
}

#[test]
fn guest_code_in_values_sent_to_the_host_runs_under_the_limits() {
    check(
        "return await host.echo({ get x() { return 5 } })",
        r#"completed {"x":5}"#,
    );
    check(
        "return await host.echo({ toJSON() { return 'custom' } })",
        r#"completed "custom""#,
    );
    check(
        "const p = new Proxy({}, { ownKeys() { throw new Error('trap') } }); \
         try { await host.echo(p) } catch (e) { return e.message }",
        r#"completed "trap""#,
    );
    check(
        "try { await host.echo({ get x() { throw new RangeError('getter') } }) } catch (e) { return e.name }",
        r#"completed "RangeError""#,
    );
    let fast = limits().with_timeout(std::time::Duration::from_millis(300));
    crate::support::check_with(
        "await host.echo({ get x() { for (;;) {} } })",
        fast,
        "failed \"timeout\" code mode timeout exceeded",
    );
    // A getter that calls the bridge itself: re-entrancy is just another call.
    check(
        "return await host.echo({ get x() { host.echo(1); return 2 } })",
        r#"completed {"x":2}"#,
    );
    // The final value goes through the safe adapter: a throwing getter cannot fail it.
    check(
        "return { get x() { throw new Error('late') } }",
        r#"completed {"x":"[Unserializable]"}"#,
    );
}

#[test]
fn tampering_with_globals_does_not_fool_the_bridge() {
    check(
        "JSON.stringify = () => '\"forged\"'; JSON.parse = () => 'forged'; \
         Array.prototype.toJSON = undefined; Reflect.apply = () => 'forged'; \
         Function.prototype.call = () => 'forged'; Function.prototype.apply = () => 'forged'; \
         Object.defineProperty = () => { throw new Error('forged') }; \
         Promise.prototype.then = function () { throw new Error('forged then') }; \
         globalThis.Promise = function () { throw new Error('forged Promise') }; \
         globalThis.Error = function () { return { message: 'forged error' } }; \
         const value = await tools.call('id', { a: [1, 2] }); \
         let message; try { await host.fail('real') } catch (e) { message = e.message } \
         return [value, message]",
        r#"completed [["id",{"a":[1,2]}],"real"]"#,
    );
    check(
        "Object.prototype.x = 1; Array.prototype[5] = 'hole'; JSON.parse = () => 'forged'; \
         return await tools.call('id', { a: [1, 2] })",
        r#"completed ["id",{"a":[1,2]}]"#,
    );
    check(
        "'use strict'; const errors = []; \
         for (const f of [() => { tools.call = () => 'forged' }, () => { delete tools.call }, \
                          () => { tools = {} }, () => { text = () => 1 }, () => { ALL_TOOLS[0].id = 'x' }, \
                          () => { host.echo.extra = 1 }, () => { namespaces.Host = 1 }]) { \
           try { f(); errors.push('no error') } catch (e) { errors.push(e.name) } \
         } \
         return [errors, await tools.call('still'), ALL_TOOLS[0].id]",
        r#"completed [["TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","TypeError"],["still"],"openclaw:core:echo"]"#,
    );
}

#[test]
fn a_root_built_on_first_read_ignores_tampering_before_it() {
    // `ALL_TOOLS` (a frozen root set by one value only) is parsed and frozen on its first read,
    // after guest code ran: tampered built-ins and prototype accessors must change nothing.
    check(
        "'use strict'; const getter = Reflect.getOwnPropertyDescriptor(globalThis, 'ALL_TOOLS').get; \
         const getterFrozen = Object.isFrozen(getter); \
         Object.defineProperty(Object.prototype, 'id', { get() { return 'forged' }, set() { throw new Error('setter ran') } }); \
         Object.defineProperty(Object.prototype, 'name', { set() { throw new Error('setter ran') } }); \
         JSON.parse = () => ['forged']; Object.freeze = (o) => o; Reflect.ownKeys = () => []; \
         Object.isFrozen = () => true; \
         const first = getter.call({}); const errors = []; \
         for (const f of [() => { ALL_TOOLS = [] }, () => { first[0].id = 'x' }, () => { first.push(1) }, \
                          () => { delete globalThis.ALL_TOOLS }, () => { first[0].extra = 1 }]) { \
           try { f(); errors.push('no error') } catch (e) { errors.push(e.name) } \
         } \
         const d = Reflect.getOwnPropertyDescriptor(globalThis, 'ALL_TOOLS'); \
         return [getterFrozen, first === ALL_TOOLS, first[0].id, first[0].name, first.length, errors, \
                 d.configurable, d.set === undefined, d.get === getter]",
        r#"completed [true,true,"openclaw:core:echo","echo",1,["TypeError","TypeError","TypeError","TypeError","TypeError"],false,true,true]"#,
    );
}

#[test]
fn no_internal_is_reachable_for_forging() {
    // No host internal is installed as a global, under any name.
    check(
        "return Object.getOwnPropertyNames(globalThis).concat(Object.getOwnPropertySymbols(globalThis).map(String)) \
           .filter((n) => n.startsWith('__') || /host|openclaw|settle|resolv/i.test(n))",
        r#"completed ["host"]"#,
    );
    // Bootstrap functions stringify without their source.
    check(
        "return [text, json, yield_control, tools.call, tools.search].map(String) \
           .filter((source) => /host|encode|resolvers/.test(source))",
        "completed []",
    );
    // V8-style stack hooks are pinned off, so call sites never hand out internal functions.
    check(
        "let stack; try { Error.prepareStackTrace = (e, sites) => sites.map((s) => s.getFunction()) } catch (e) {} \
         await host.echo({ get x() { stack = new Error('probe').stack; return 1 } }); \
         return [Error.prepareStackTrace === undefined, typeof stack]",
        r#"completed [true,"string"]"#,
    );
    check(
        "try { new tools.call() } catch (e) { return e.name }",
        r#"completed "TypeError""#,
    );
    check(
        "'use strict'; try { return typeof tools.call.caller } catch (e) { return e.name }",
        r#"completed "TypeError""#,
    );
    // Calling the guest-visible function with another `this` changes nothing.
    check(
        "return await tools.call.call({ method: 'fail' }, 'x')",
        r#"completed ["x"]"#,
    );
}

#[test]
fn thousands_of_unawaited_calls_queue_then_are_refused() {
    let (host, _cancelled) = TestHost::new();
    // 16 in flight, 1024 queued in FIFO order, the rest refused with the stable message.
    let program = "let refused = 0; \
                   for (let i = 0; i < 5000; i++) host.never(i).catch((e) => { \
                     if (e.message === 'too many pending code mode tool calls') refused++ }); \
                   await null; await null; text(String(refused)); await yield_control(); \
                   return refused";
    // The leg parks at the yield, whenever the loop ends: no deadline is near.
    let limits = limits();
    let runtime = runtime();
    runtime.block_on(async {
        let mut run = limits
            .start(program, crate::support::setup(), Arc::clone(&host) as _)
            .unwrap();
        let step = run.drive(crate::support::deadline(&limits)).await;
        // The program yielded with what it started still pending: the run parks.
        let LegEnd::Suspended {
            pending, output, ..
        } = step
        else {
            panic!("unexpected {step:?}")
        };
        assert_eq!(
            output,
            vec![OutputItem::Text {
                text: "3960".into()
            }]
        );
        assert_eq!(pending.len(), 16 + 1024);
        assert_eq!(pending.iter().filter(|call| call.started).count(), 16);
        // Started calls first, then the queue in request order.
        assert!(
            pending
                .windows(2)
                .all(|pair| pair[0].started >= pair[1].started)
        );
    });
    // Only the calls in flight reached the host.
    assert!(host.calls() <= 16, "host saw {} calls", host.calls());
}

#[test]
fn calls_beyond_the_pending_cap_wait_in_the_queue() {
    check(
        "const all = []; for (let i = 0; i < 64; i++) all.push(await host.echo(i)); \
         const batch = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => host.echo(i))); \
         return [all.length, batch.filter((r) => r.status === 'fulfilled').map((r) => r.value).join() === Array.from({ length: 100 }, (_, i) => i).join()]",
        "completed [64,true]",
    );
}

#[test]
fn the_queue_bound_refuses_the_call_after_it() {
    let (host, _cancelled) = TestHost::new();
    let program = "const batch = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => host.echo(i))); \
                   return batch.map((r) => r.status === 'fulfilled' ? 1 : r.reason.message)";
    let limits = limits().with(|limits| limits.with_max_pending_calls(2).with_max_queued_calls(3));
    let step = runtime().block_on(run_with(program, limits, host));
    let LegEnd::Completed { value, .. } = step else {
        panic!("unexpected {step:?}")
    };
    let refused = serde_json::json!("too many pending code mode tool calls");
    let mut expect = vec![serde_json::json!(1); 5];
    expect.extend(std::iter::repeat_n(refused, 15));
    assert_eq!(value, serde_json::Value::Array(expect));
}

#[test]
fn an_unawaited_call_runs_before_the_run_completes() {
    let (host, _cancelled) = TestHost::new();
    let program = "host.echo('side effect').then((v) => text('settled ' + v)); return 1";
    let step = runtime().block_on(run_with(program, limits(), Arc::clone(&host)));
    assert_eq!(
        render(&step),
        r#"completed 1 output=[{"type":"text","text":"settled side effect"}]"#
    );
    assert_eq!(host.calls(), 1);
}

#[test]
fn drive_after_the_end_reports_finished() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let mut run = limits()
            .start("return 1", crate::support::setup(), host)
            .unwrap();
        assert!(matches!(
            run.drive(crate::support::deadline(&limits())).await,
            LegEnd::Completed { .. }
        ));
        assert!(!run.is_alive());
        assert_eq!(run.memory_bytes(), 0);
        let again = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(
            render(&again),
            "failed \"internal_error\" code mode run has already finished"
        );
    });
}

#[test]
fn drive_without_timers_is_runtime_unavailable() {
    let (host, _cancelled) = TestHost::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let step = runtime.block_on(async {
        let mut run = limits()
            .start("return 1", crate::support::setup(), host)
            .unwrap();
        run.drive(crate::support::deadline(&limits())).await
    });
    assert_eq!(
        render(&step),
        "failed \"runtime_unavailable\" code mode runtime unavailable: the tokio runtime has no timers enabled"
    );
}

#[test]
fn guest_globals_snapshot() {
    let (host, _cancelled) = TestHost::new();
    let step = runtime().block_on(run_with(
        "return Object.getOwnPropertyNames(globalThis).sort()",
        limits(),
        host,
    ));
    let LegEnd::Completed { value, .. } = step else {
        panic!("{}", render(&step))
    };
    insta::assert_json_snapshot!("guest_globals", value);
}

#[test]
fn lone_surrogates_and_deep_values_fail_cleanly() {
    // Lone surrogates become U+FFFD wherever a string leaves the VM.
    check(
        "text('a\\ud800b'); json({ k: '\\udc00' }); \
         return [await host.echo('\\ud800x'), '\\ud800']",
        "completed [\"\u{fffd}x\",\"\u{fffd}\"] output=[{\"type\":\"text\",\"text\":\"a\u{fffd}b\"},{\"type\":\"json\",\"value\":{\"k\":\"\u{fffd}\"}}]",
    );
    check(
        "throw new Error('bad \\ud800')",
        "failed - Error: bad \u{fffd}",
    );
    // Deep guest values: the engine's stack check refuses them on the way to the host; results
    // are cut at the safe adapter's depth.
    check(
        "let v = {}; const root = v; for (let i = 0; i < 100000; i++) { v.next = {}; v = v.next } \
         const out = []; \
         try { await host.echo(root) } catch (e) { out.push(e.name) } \
         json(root); return out",
        &format!(
            r#"completed ["RangeError"] output=[{{"type":"json","value":{}"[Too deep]"{}}}]"#,
            r#"{"next":"#.repeat(100),
            "}".repeat(100)
        ),
    );
}

#[test]
fn guest_paths_named_like_prototype_members_stay_own_properties() {
    use codemode_sandbox::{Callable, GuestSetup};
    let mut setup = GuestSetup::default();
    let path = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    let bridge = || Callable::Bridge {
        method: "echo".into(),
        bound_args: vec![],
    };
    // An MCP server named `to_string` and a namespace scope key `valueOf`.
    setup
        .callables
        .push((path(&["MCP", "toString", "tool"]), bridge()));
    setup
        .callables
        .push((path(&["hasOwnProperty", "x"]), bridge()));
    setup
        .values
        .push((path(&["ns", "valueOf", "v"]), serde_json::json!(1)));
    setup.freeze = vec!["MCP".into(), "ns".into(), "toString".into()];
    let program = "return [typeof MCP.toString.tool, typeof ({}).toString.tool, \
                   typeof Object.prototype.hasOwnProperty.x, ns.valueOf.v, \
                   Object.isFrozen(Object.prototype.toString), ({}).valueOf.v === undefined]";
    let (host, _cancelled) = TestHost::new();
    let step = runtime().block_on(async {
        let mut run = limits().start(program, setup, host).unwrap();
        run.drive(crate::support::deadline(&limits())).await
    });
    assert_eq!(
        render(&step),
        r#"completed ["function","undefined","undefined",1,false,true]"#
    );
}

#[test]
fn huge_values_leaving_the_vm_are_refused_without_copying() {
    // A 2^29-character rope: text(), json() and the return value refuse it by size.
    check(
        "let s = 'ab'; for (let i = 0; i < 28; i++) s = s + s; \
         try { text(s) } catch (e) { return e.message }",
        r#"failed "output_limit_exceeded" code mode output limit exceeded"#,
    );
    check(
        "let s = 'ab'; for (let i = 0; i < 28; i++) s = s + s; return s",
        r#"failed "output_limit_exceeded" code mode output limit exceeded"#,
    );
    check(
        "let s = 'ab'; for (let i = 0; i < 24; i++) s = s + s; \
         try { await host.echo(s) } catch (e) { return e.name + ': ' + e.message }",
        r#"completed "RangeError: code mode call arguments exceed 8388608 bytes""#,
    );
}

/// Bridge calls a guest retries in a loop, catching every refusal, end the run at its deadline
/// within the grace, whatever refuses them: the size bound while encoding (one argument, or all
/// of them together), the pending-call bounds, or the native once the run must stop. Every
/// refusal polls the deadline (the bridge polls nothing else before encoding). How soon after
/// the deadline is checked with `CODEMODE_SLOW_TESTS=1` only (a wall-time bound).
#[test]
fn refused_bridge_calls_retried_in_a_loop_stop_at_the_deadline() {
    let limits = limits()
        .with_timeout(Duration::from_millis(100))
        .with_memory_bytes(256 << 20);
    let wall_checked = crate::timing::wall_time_checked(
        "refused_bridge_calls_retried_in_a_loop_stop_at_the_deadline",
    );
    for program in [
        "const s = 'x'.repeat(9e6); for (;;) { try { host.echo(s) } catch (e) {} }",
        "const s = 'x'.repeat(3e6); for (;;) { try { host.echo(s, s, s) } catch (e) {} }",
        "const s = 'x'.repeat(1e6); for (;;) { try { host.never(s) } catch (e) {} }",
        "for (;;) { try { local.fail('x') } catch (e) {} }",
    ] {
        let started = Instant::now();
        let step = runtime().block_on(run_with(program, limits.clone(), TestHost::new().0));
        let took = started.elapsed();
        assert!(
            render(&step).contains("code mode timeout exceeded"),
            "{program}: {}",
            render(&step)
        );
        assert!(
            !wall_checked || took < limits.timeout + DEADLINE_GRACE + Duration::from_secs(2),
            "{program}: ended after {took:?}"
        );
    }
}
