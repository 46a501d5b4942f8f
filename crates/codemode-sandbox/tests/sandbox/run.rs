//! Behaviour of one run: built-ins, the JSON bridge, guest errors and hostile programs (the same
//! in a worker process: `isolation.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{GuestSetup, LegEnd, RunError};

use crate::support::{TestHost, TestLimits, check, check_with, limits, render, run_with, runtime};

#[test]
fn happy_paths() {
    check("return 1 + 1", "completed 2");
    check("const x = 1;", "completed null");
    check("return undefined", "completed null");
    check(
        "return { a: [1, 'two', null, true], b: undefined }",
        r#"completed {"a":[1,"two",null,true]}"#,
    );
    check(
        "text('hi'); text({ a: 1 }); text(undefined); json([1, { b: 2 }]); return 0",
        r#"completed 0 output=[{"type":"text","text":"hi"},{"type":"text","text":"{\"a\":1}"},{"type":"text","text":"undefined"},{"type":"json","value":[1,{"b":2}]}]"#,
    );
    check(
        "const a = await host.echo(1); const b = await host.echo(a + 1); return [a, b]",
        "completed [1,2]",
    );
    check(
        "return await Promise.all([1, 2, 3].map((n) => host.echo(n * 10)))",
        "completed [10,20,30]",
    );
    check(
        "return await tools.call('openclaw:core:echo', { x: 1 })",
        r#"completed ["openclaw:core:echo",{"x":1}]"#,
    );
    check(
        "return await tools.echo({ x: 1 })",
        r#"completed ["openclaw:core:echo",{"x":1}]"#,
    );
    check(
        "return await tools.call('id', undefined, () => 1)",
        "failed - TypeError: a function cannot cross the code mode bridge",
    );
    check(
        "return await tools.search('files')",
        r#"completed {"query":"files"}"#,
    );
    check(
        "try { await host.fail('nope') } catch (e) { return [e instanceof Error, e.message] }",
        r#"completed [true,"nope"]"#,
    );
    check(
        "try { await local.fail() } catch (e) { return [e instanceof Error, e.message] }",
        r#"completed [true,"local nope"]"#,
    );
    check(
        "return ALL_TOOLS.map((t) => t.id)",
        r#"completed ["openclaw:core:echo"]"#,
    );
    check(
        "return namespaces.Host === host && Object.isFrozen(host.echo)",
        "completed true",
    );
    check(
        "const p = host.echo(1); return p instanceof Promise",
        "completed true",
    );
    check(
        "return await host.args(1, undefined, 'x')",
        r#"completed [1,null,"x"]"#,
    );
    check(
        "try { await host.panic() } catch (e) { return e.message }",
        r#"completed "code mode host call failed""#,
    );
}

#[test]
fn guest_failures_keep_their_message_and_output() {
    check(
        "text('before'); throw new Error('boom')",
        r#"failed - Error: boom output=[{"type":"text","text":"before"}]"#,
    );
    check("throw 'boom'", "failed - boom");
    // QuickJS reports exhausted memory as a thrown `null` too, but only a refused allocation makes
    // a failure the memory limit: a guest's own `null` or `undefined` is its error, as text.
    check("throw null", "failed - null");
    check("return Promise.reject(null)", "failed - null");
    check("await Promise.reject(null)", "failed - null");
    check("await (async () => { throw null })()", "failed - null");
    check(
        "await host.echo(1); await (async () => { throw null })()",
        "failed - null",
    );
    check("throw undefined", "failed - undefined");
    check("await Promise.reject(undefined)", "failed - undefined");
    check(
        "await (async () => { throw undefined })()",
        "failed - undefined",
    );
    // What QuickJS throws when it cannot allocate, thrown by the guest itself.
    check(
        "throw new InternalError('out of memory')",
        "failed - InternalError: out of memory",
    );
    // A guest that caught an allocation failure and then threw something else fails with that.
    check_with(
        "try { 'x'.repeat(1 << 29) } catch (e) {} throw new Error('after')",
        limits().with_memory_bytes(4 << 20),
        "failed - Error: after",
    );
    check("throw { code: 7 }", r#"failed - {"code":7}"#);
    check("throw new TypeError('')", "failed - TypeError");
    check(
        "await host.fail('host says no')",
        "failed - Error: host says no",
    );
    check(
        "return missing.value",
        "failed - ReferenceError: missing is not defined",
    );
    check(
        "throw new Error('interrupted')",
        "failed - Error: interrupted",
    );
    check(
        "function f(n) { return f(n + 1) + 1 } return f(0)",
        "failed - RangeError: Maximum call stack size exceeded",
    );
    check(
        "const big = 'x'.repeat(10000); throw new Error(big)",
        &format!("failed - Error: {}…", "x".repeat(4089)),
    );
}

#[test]
fn rejected_before_running() {
    check(
        "const fs = require('fs')",
        "failed \"invalid_input\" code mode module access is disabled.",
    );
    check(
        "return (await import('fs')).x",
        "failed \"invalid_input\" code mode module access is disabled.",
    );
    check(
        "return (",
        "failed \"invalid_input\" SyntaxError: unexpected token in expression: '}' (at the end of the program)",
    );
    check(
        "let x = 1;\nlet y = (;",
        "failed \"invalid_input\" SyntaxError: unexpected token in expression: ';' (line 2, column 10)",
    );
    // Code smuggled out of the function body still runs under the limits.
    check(
        "}); while (true) {} (async function () {",
        "failed \"invalid_input\" SyntaxError: unexpected `}` closes the code mode function body (line 1, column 1)",
    );
}

#[test]
fn limits_stop_hostile_programs() {
    let fast = limits().with_timeout(Duration::from_millis(300));
    check_with(
        "while (true) {}",
        fast.clone(),
        "failed \"timeout\" code mode timeout exceeded",
    );
    check_with(
        "await host.echo(1); while (true) {}",
        fast.clone(),
        "failed \"timeout\" code mode timeout exceeded",
    );
    check_with(
        "try { while (true) {} } catch (e) { return 'caught' }",
        fast.clone(),
        "failed \"timeout\" code mode timeout exceeded",
    );
    check_with(
        "function flood() { Promise.resolve().then(flood) } flood(); await host.never()",
        fast.clone(),
        "failed \"timeout\" code mode timeout exceeded",
    );
    // The programs below end on their own, whatever the machine's speed: `limits()` puts no
    // deadline near.
    check_with(
        "await new Promise(() => {})",
        limits(),
        "failed - code mode promise is pending without host work",
    );
    let tight = limits().with_memory_bytes(4 << 20);
    check_with(
        "const a = []; while (true) a.push({ n: a.length })",
        tight.clone(),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
    check_with(
        "return 'x'.repeat(1 << 29).length",
        tight.clone(),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
    check_with(
        "let s = 'xy'; while (true) { s = s + s; s.charCodeAt(s.length - 1); } ",
        tight.clone(),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
    check_with(
        "let s = 'x'; const keep = []; while (true) { s = s + s; keep.push(s.split('')) }",
        tight.clone(),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
    // Inside async functions, after an await, in microtask chains: QuickJS rejects with `null`
    // or an `InternalError`, and the refused allocation makes it the memory limit.
    for program in [
        "await (async () => { const a = []; while (true) a.push({ n: a.length }) })()",
        "await host.echo(1); const a = []; while (true) a.push([a.length])",
        "const a = []; async function grow() { while (true) a.push({ n: a.length }) } await grow()",
        "const a = []; function chain() { a.push('x'.repeat(1000) + a.length); return Promise.resolve().then(chain) } await chain()",
        "const a = []; await new Promise(() => { (function step() { a.push(new Array(1000).fill(a.length)); Promise.resolve().then(step) })() })",
        "await Promise.all(Array.from({ length: 8 }, async () => { const a = []; for (;;) { a.push({}); await null } }))",
        "try { const a = []; while (true) a.push({ n: a.length }) } catch (e) { throw e }",
        "const a = []; try { while (true) a.push({ n: a.length }) } catch (e) { a.length = 0; throw e }",
    ] {
        check_with(
            program,
            tight.clone(),
            "failed \"internal_error\" code mode memory limit exceeded",
        );
    }
}

#[test]
fn big_string_literals_hit_the_memory_limit() {
    // A program within the size limit whose literals do not fit a small heap: compiling it (or
    // building the strings) runs out of memory.
    let literal = "x".repeat(300_000);
    let program = format!(
        "const parts = [{}]; return parts.join('').length",
        std::iter::repeat_n(format!("'{literal}'"), 3)
            .collect::<Vec<_>>()
            .join(", ")
    );
    check_with(
        &program,
        limits().with_memory_bytes(1 << 20),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
    let program =
        format!("const s = '{literal}'; const keep = []; while (true) keep.push(s.toUpperCase())");
    check_with(
        &program,
        limits().with_memory_bytes(4 << 20),
        "failed \"internal_error\" code mode memory limit exceeded",
    );
}

fn one_leg(program: &str, limits: TestLimits) -> LegEnd {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(run_with(program, limits, host))
}

#[test]
fn output_limit_counts_json_bytes_cumulatively() {
    let small = limits().with_max_output_bytes(1024);
    // An item counts as its full wire JSON: `{"type":"text","text":` + the JSON string + `}`,
    // plus the `,` separating items (24 bytes of envelope). 998 characters are 1000 JSON bytes,
    // so the item takes exactly 1024: it fits, the final `null` (4 bytes) does not.
    match one_leg("text('x'.repeat(998)); return null", small.clone()) {
        LegEnd::Failed {
            error: RunError::OutputLimitExceeded,
            output,
        } => assert_eq!(output.len(), 1),
        other => panic!("{}", render(&other)),
    }
    match one_leg(
        "text('x'.repeat(998)); return",
        small.clone().with_max_output_bytes(1028),
    ) {
        LegEnd::Completed { output, .. } => assert_eq!(output.len(), 1),
        other => panic!("{}", render(&other)),
    }
    // One huge item is refused as a whole; nothing of it is kept.
    match one_leg(
        "text('ok'); text('x'.repeat(5_000_000)); return 1",
        small.clone(),
    ) {
        LegEnd::Failed {
            error: RunError::OutputLimitExceeded,
            output,
        } => assert_eq!(output.len(), 1),
        other => panic!("{}", render(&other)),
    }
    // Many small items; catching the refusal does not save the guest.
    let many = "for (let i = 0; i < 100000; i++) { try { text('yy') } catch (e) {} } return 1";
    match one_leg(many, small.clone()) {
        LegEnd::Failed {
            error: RunError::OutputLimitExceeded,
            output,
        } => {
            assert_eq!(
                output.len(),
                1024 / 28,
                "each 'yy' item counts 4 + 24 JSON bytes"
            );
        }
        other => panic!("{}", render(&other)),
    }
    check_with(
        "json({ a: 'x'.repeat(2000) })",
        small,
        "failed \"output_limit_exceeded\" code mode output limit exceeded",
    );
}

#[test]
fn atomics_cannot_block_the_host_thread() {
    check(
        "const cell = new Int32Array(new SharedArrayBuffer(4)); \
         try { Atomics.wait(cell, 0, 0) } catch (e) { return e.name }",
        r#"completed "TypeError""#,
    );
}

#[test]
fn setup_paths_are_installed_in_order_and_bad_ones_skipped() {
    let (host, _cancelled) = TestHost::new();
    let mut setup = GuestSetup::default();
    setup
        .values
        .push((vec!["MCP".into()], serde_json::json!({})));
    setup.values.push((vec![], serde_json::json!(1)));
    setup
        .values
        .push((vec!["a".into(), String::new()], serde_json::json!(1)));
    setup.values.push((
        vec!["API".into(), "meta".into()],
        serde_json::json!({ "v": 1 }),
    ));
    setup.callables.push((
        vec!["MCP".into(), "github".into(), "createIssue".into()],
        codemode_sandbox::Callable::Bridge {
            method: "args".into(),
            bound_args: vec![serde_json::json!("mcp:github:create_issue")],
        },
    ));
    setup
        .aliases
        .push((vec!["gh".into()], vec!["MCP".into(), "github".into()]));
    setup
        .aliases
        .push((vec!["nothing".into()], vec!["missing".into()]));
    setup.freeze = vec!["MCP".into(), "API".into(), "absent".into()];
    let program = "return [await gh.createIssue({ t: 1 }), API.meta.v, typeof nothing, typeof a, Object.isFrozen(MCP.github)]";
    let step = runtime().block_on(async move {
        let mut run = limits().start(program, setup, host).unwrap();
        run.drive(Instant::now() + Duration::from_secs(2)).await
    });
    assert_eq!(
        render(&step),
        r#"completed [["mcp:github:create_issue",{"t":1}],1,"undefined","undefined",true]"#
    );
}

#[test]
fn start_reports_a_setup_that_does_not_fit() {
    let (host, _cancelled) = TestHost::new();
    let mut setup = GuestSetup::default();
    setup.values.push((
        vec!["BIG".into()],
        serde_json::Value::String("x".repeat(4 << 20)),
    ));
    // The VM is built by the first leg, under its deadline.
    let mut run = limits()
        .with_memory_bytes(1 << 20)
        .start("return 1", setup, host)
        .unwrap();
    let step = runtime().block_on(run.drive(crate::support::deadline(&limits())));
    let LegEnd::Failed { error, .. } = step else {
        panic!("unexpected {step:?}")
    };
    assert_eq!(
        error.code(),
        Some(codemode_sandbox::ErrorCode::RuntimeUnavailable),
        "{error}"
    );
}

#[test]
fn many_runs_in_parallel_stay_isolated() {
    let rt = runtime();
    let (host, _cancelled) = TestHost::new();
    let results: Vec<String> = rt.block_on(async {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let host = Arc::clone(&host);
                tokio::spawn(async move {
                    let program = format!("globalThis.mine = {i}; await host.echo(0); return [mine, await host.echo({i})]");
                    render(&run_with(&program, limits(), host).await)
                })
            })
            .collect();
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await.unwrap());
        }
        results
    });
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result, &format!("completed [{i},{i}]"));
    }
}

#[test]
fn natives_over_huge_lengths_end_at_the_deadline() {
    // Each would run for minutes to hours inside one C loop. The engine meters the loop
    // (codemode-quickjs-sys patch 10), so the deadline ends it: no refusal and no cap.
    let short = limits().with_timeout(Duration::from_millis(300));
    for program in [
        "new Array(2 ** 32 - 1).join('')",
        "Array.prototype.reverse.call({ length: 2 ** 53 - 1 })",
        "Array.prototype.copyWithin.call({ length: 2 ** 40 }, 0, 1)",
        "[].concat({ length: 2 ** 53 - 1, [Symbol.isConcatSpreadable]: true })",
        "Array.prototype.sort.call(Object.create({ length: 2 ** 40 }))",
        "Array.prototype.join.call({ length: { valueOf() { return 2 ** 53 } } })",
        "Array.prototype.lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)",
    ] {
        check_with(
            &format!(
                "try {{ {program}; return 'ran' }} catch (e) {{ return e.name + ': ' + e.message }}"
            ),
            short.clone(),
            "failed \"timeout\" code mode timeout exceeded",
        );
    }
    // A length is read and converted as the standard says, an accessor or an object included,
    // and a Proxy is an ordinary receiver.
    check(
        "let n = 0; const counted = { get length() { n++; return 2 } }; \
         const proxy = new Proxy([3, 1, 2], {}); \
         return [Array.prototype.join.call(counted), n, Array.prototype.join.call({ length: { valueOf: () => 2 }, 0: 'a', 1: 'b' }), \
                 Array.prototype.shift.call(new Proxy({ length: 1, 0: 'x' }, {})), proxy.sort().join(), proxy.at(-1), proxy.push(4), \
                 [0].concat(new Proxy({}, {})).length, \
                 (() => { try { Array.prototype.slice.call({ length: '1e15' }) } catch (e) { return e.name } })()]",
        r#"completed [",",1,"a,b","x","1,2,3",3,4,2,"RangeError"]"#,
    );
    // Ordinary use is untouched.
    check(
        "return [[3, 1, 2].sort().join(''), 'abc'.split('').reverse().join(''), [1].concat([2], 3), \
                 Array.prototype.slice.call(new Uint8Array([7, 8])), Array.prototype.join.call({ length: 2, 0: 'a', 1: 'b' }, '-'), \
                 (function () { return Array.prototype.slice.call(arguments, 1) })(1, 2, 3), [1, [2, [3]]].flat(Infinity), \
                 new Array(5).fill(0).length, [1, 2, 3].at(-1), Array.prototype.join.call('xyz')]",
        r#"completed ["123","cba",[1,2,3],[7,8],"a-b",[2,3],[1,2,3],5,3,"x,y,z"]"#,
    );
}

#[test]
fn console_lines_are_output_items_in_program_order() {
    check(
        "console.log('a', 1, { b: [2] }); text('t'); console.info('%s is %d%%', 'x', 42); \
         console.warn('%j', { k: 1 }); console.error(new Error('e').message, null, undefined); \
         console.debug(() => 1, Symbol('s'), 10n, '%i', 3.9); return 1",
        r#"completed 1 output=[{"type":"text","text":"a 1 {\"b\":[2]}"},{"type":"text","text":"t"},{"type":"text","text":"info: x is 42%"},{"type":"text","text":"warn: {\"k\":1}"},{"type":"text","text":"error: e null undefined"},{"type":"text","text":"debug: [Function: anonymous] Symbol(s) 10n %i 3.9"}]"#,
    );
    // Cyclic and deep values are printed, bounded.
    check(
        "const a = { n: 1 }; a.self = a; let d = []; for (let i = 0; i < 20; i++) d = [d]; console.log(a, d); return 1",
        r#"completed 1 output=[{"type":"text","text":"{\"n\":1,\"self\":\"[Circular]\"} [[[[[[[[\"[Too deep]\"]]]]]]]]"}]"#,
    );
}

#[test]
fn console_in_a_tight_loop_ends_at_the_output_limit_keeping_the_output() {
    let small = limits().with_max_output_bytes(1024);
    match one_leg(
        "for (;;) { try { console.log('line') } catch (e) {} }",
        small,
    ) {
        LegEnd::Failed {
            error: RunError::OutputLimitExceeded,
            output,
        } => assert_eq!(output.len(), 1024 / 30, "each line is 6 + 24 JSON bytes"),
        other => panic!("{}", render(&other)),
    }
    // One huge line is refused whole, without copying it out of the VM.
    check_with(
        "console.log('x'.repeat(5_000_000))",
        limits().with_max_output_bytes(1024),
        r#"failed "output_limit_exceeded" code mode output limit exceeded"#,
    );
}

#[test]
fn text_encoder_and_decoder_speak_utf8() {
    check(
        "const e = new TextEncoder(); const bytes = e.encode('aé€😀\\ud800'); \
         const d = new TextDecoder(); \
         const bad = new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62]); \
         let fatal; try { new TextDecoder('utf-8', { fatal: true }).decode(bad) } catch (err) { fatal = err.name } \
         const into = new Uint8Array(4); const r = e.encodeInto('€€', into); \
         return [Array.from(bytes), d.decode(bytes), d.decode(bad), fatal, \
                 d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), \
                 new TextDecoder('utf8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf])).length, \
                 [r.read, r.written], e.encoding, d.encoding]",
        r#"completed [[97,195,169,226,130,172,240,159,152,128,239,191,189],"aé€😀�","a��b","TypeError","A",1,[1,3],"utf-8","utf-8"]"#,
    );
    check(
        "try { new TextDecoder('latin1') } catch (e) { return e.name }",
        r#"completed "RangeError""#,
    );
}

#[test]
fn structured_clone_copies_data_and_refuses_functions() {
    check(
        "const src = { d: new Date(5), m: new Map([[1, { x: 1 }]]), s: new Set([1, 2]), \
                       t: new Uint8Array([1, 2]), a: [1, , 3], n: null }; src.self = src; \
         const c = structuredClone(src); \
         let refused; try { structuredClone({ f() {} }) } catch (e) { refused = e.name } \
         return [c !== src, c.self === c, c.d instanceof Date && c.d.getTime(), c.m.get(1).x, \
                 c.m.get(1) !== src.m.get(1), [...c.s], Array.from(c.t), c.t !== src.t, 1 in c.a, c.n, refused]",
        r#"completed [true,true,5,1,true,[1,2],[1,2],true,false,null,"DataCloneError"]"#,
    );
}

#[test]
fn no_part_of_the_bootstrap_is_a_module_guest_code_can_import() {
    // The bootstrap's parts are scripts, not modules: an `import()` built at run time, out of
    // the pre-check's sight, finds none of them, even once the runtime globals are loaded.
    let names = [
        "<codemode>",
        "<codemode globals>",
        "<codemode cut>",
        "<codemode readings>",
    ];
    let program = format!(
        "[1].join(); 'a'.indexOf('a'); typeof console; const seen = []; \
         for (const name of {names}) {{ \
           try {{ const m = await (0, eval)('imp' + 'ort(' + JSON.stringify(name) + ')'); \
                  seen.push(typeof m); }} \
           catch (e) {{ seen.push(e.message); }} \
         }} \
         return seen",
        names = serde_json::to_string(&names).unwrap(),
    );
    let refused: Vec<String> = names
        .iter()
        .map(|name| format!("could not load module '{name}'"))
        .collect();
    check(
        &program,
        &format!("completed {}", serde_json::to_string(&refused).unwrap()),
    );
}

#[test]
fn a_final_value_too_big_for_the_budget_is_cut_to_valid_json() {
    let small = limits().with_max_output_bytes(1024);
    let cases = [
        "return Array.from({ length: 1000 }, (_, i) => i)",
        "return 'é'.repeat(5000)",
        "const o = {}; for (let i = 0; i < 500; i++) o['key' + i] = { nested: 'x'.repeat(i) }; return o",
        "text('x'.repeat(600)); return [{ a: 'y'.repeat(2000) }, 2, 3]",
        // The cut runs after guest code, which cannot change what it uses.
        "JSON.stringify = () => '1'; Object.keys = () => []; String.prototype.slice = () => ''; \
         Array.isArray = () => false; Object.create = () => ({}); \
         const o = {}; for (let i = 0; i < 300; i++) o['k' + i] = ['z'.repeat(40)]; return o",
    ];
    for program in cases {
        match one_leg(program, small.clone()) {
            LegEnd::Completed {
                value,
                output,
                truncated: Some(truncated),
            } => {
                let kept = serde_json::to_string(&value).unwrap();
                let used: usize = output
                    .iter()
                    .map(|item| serde_json::to_string(item).unwrap().len() + 1)
                    .sum();
                assert_eq!(kept.len(), truncated.kept_bytes, "{program}");
                assert!(
                    used + kept.len() <= 1024,
                    "{program}: {used} + {}",
                    kept.len()
                );
                assert!(truncated.original_bytes > truncated.kept_bytes, "{program}");
                assert!(
                    kept.contains('…'),
                    "{program}: a marker says what was dropped: {kept}"
                );
            }
            other => panic!("{program}: {}", render(&other)),
        }
    }
    match one_leg("return Array.from({ length: 1000 }, (_, i) => i)", small) {
        LegEnd::Completed { value, .. } => {
            let items = value.as_array().unwrap();
            assert_eq!(
                items.first(),
                Some(&serde_json::json!(0)),
                "the first items are kept"
            );
            assert!(
                items
                    .last()
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .ends_with("more items]")
            );
        }
        other => panic!("{}", render(&other)),
    }
    // A value that fits is not marked.
    check("return [1, 2, 3]", "completed [1,2,3]");
}
