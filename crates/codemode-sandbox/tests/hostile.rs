//! Hostile programs against built-ins whose native loops never reach the interrupt handler
//! (see docs/builtins-audit.md). One test function, so it is alone in its process and the
//! process CPU time it reads belongs to the cell it measures. Every cell runs twice: with the VM
//! on a VM thread, and in a worker process (`Placement::Process`), where the host kills a
//! worker stuck past the deadline plus the grace.
//!
//! `--nocapture` prints each cell's outcome, CPU and wall time. The figures in
//! docs/builtins-audit.md come from a release run, `cargo test --release -p codemode-sandbox
//! --test hostile -- --nocapture`, once at the default memory limit and once with
//! `CODEMODE_HOSTILE_MEMORY=1073741824` (the largest `memoryLimitBytes`);
//! `CODEMODE_HOSTILE_ONLY=text` keeps the cells whose name contains `text`.
//!
//! The CPU bound holds on any machine and is always checked. The wall-time bound (each cell
//! answers within the grace plus two seconds) is a timing assertion: it is checked only with
//! `CODEMODE_SLOW_TESTS=1` (`cargo xtask test --slow`; `cargo xtask ci` runs it in a step of its
//! own).

mod timing;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, DEADLINE_GRACE, GuestSetup, LegEnd, Limits, Placement, Run,
    RunError, WorkerCommand, WorkerPool, WorkerPoolConfig,
};
use serde_json::Value;

/// A host with no methods: the cells make no bridge calls.
struct NoHost;

#[codemode_sandbox::async_trait]
impl BridgeHost for NoHost {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        Err(format!("unknown method {}", request.method))
    }
}

/// The cells' memory limit: the default, or `CODEMODE_HOSTILE_MEMORY` bytes.
fn memory_bytes() -> usize {
    std::env::var("CODEMODE_HOSTILE_MEMORY")
        .ok()
        .and_then(|bytes| bytes.parse().ok())
        .unwrap_or(Limits::default().memory_bytes)
}

/// Runs `program` with the default limits and `timeout` through the public API, to its first step.
fn run_cell(program: &str, timeout: Duration, placement: &Placement) -> LegEnd {
    let limits = Limits::default().with_memory_bytes(memory_bytes());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match Run::start(
        program,
        GuestSetup::default(),
        &limits,
        placement,
        Arc::new(NoHost),
    ) {
        Ok(mut run) => runtime.block_on(run.drive(Instant::now() + timeout)),
        Err(error) => LegEnd::Failed {
            error,
            output: Vec::new(),
        },
    }
}

/// A generous bound on the CPU a cell may use past `timeoutMs` on a shared machine (the measured
/// overruns, much smaller, are in docs/builtins-audit.md and its benchmark row).
const GRACE: Duration = Duration::from_secs(1);
/// How late past the deadline plus [`DEADLINE_GRACE`] a cell may answer, when wall time is
/// checked: generous, for a machine busy with other work.
const WALL_MARGIN: Duration = Duration::from_secs(2);
const TIMEOUT: Duration = Duration::from_millis(100);

/// CPU time (user + system) this process has used so far; `None` off Linux.
fn process_cpu() -> Option<Duration> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // Clock ticks: USER_HZ is 100 on Linux.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Process CPU time once no thread of the process is running any more (two samples 30 ms apart
/// agree), or after 20 s.
fn settled_cpu() -> Option<Duration> {
    let mut last = process_cpu()?;
    for _ in 0..660 {
        std::thread::sleep(Duration::from_millis(30));
        let now = process_cpu()?;
        if now == last {
            return Some(now);
        }
        last = now;
    }
    Some(last)
}

/// Every expensive built-in, as a hostile guest would call it: forever, swallowing any error.
const CELLS: &[(&str, &str)] = &[
    (
        "string indexOf",
        "const h = 'a'.repeat(1e6), n = 'a'.repeat(5e5) + 'b'; for (;;) { try { h.indexOf(n) } catch (e) {} }",
    ),
    (
        "string includes",
        "const h = 'a'.repeat(1e6), n = 'a'.repeat(5e5) + 'b'; for (;;) { try { h.includes(n) } catch (e) {} }",
    ),
    (
        "string lastIndexOf",
        "const h = 'a'.repeat(1e6), n = 'b' + 'a'.repeat(5e5); for (;;) { try { h.lastIndexOf(n) } catch (e) {} }",
    ),
    (
        "string split",
        "const h = 'a'.repeat(1e6), n = 'a'.repeat(5e5) + 'b'; for (;;) { try { h.split(n) } catch (e) {} }",
    ),
    (
        "string replace",
        "const h = 'a'.repeat(1e6), n = 'a'.repeat(5e5) + 'b'; for (;;) { try { h.replace(n, '$&') } catch (e) {} }",
    ),
    (
        "string replaceAll",
        "const h = 'a'.repeat(1e6), n = 'a'.repeat(5e5) + 'b'; for (;;) { try { h.replaceAll(n, () => 'x') } catch (e) {} }",
    ),
    (
        "string search through an object's toString",
        "const h = 'a'.repeat(1e6), n = { toString() { return 'a'.repeat(5e5) + 'b' } }; \
         for (;;) { try { String.prototype.indexOf.call({ toString: () => h }, n) } catch (e) {} }",
    ),
    (
        "string search at the native budget",
        "const h = 'a'.repeat(8192), n = 'a'.repeat(1000) + 'b'; for (;;) { try { h.indexOf(n) } catch (e) {} }",
    ),
    // BigInts are capped at 64 Kbit by the vendored QuickJS and their quadratic work counts
    // toward the interrupt counter (crates/codemode-quickjs-sys/PATCHES.md): every operation at the cap.
    (
        "BigInt toString at the cap",
        "const b = (1n << 65500n) + 12345n; for (;;) { try { b.toString() } catch (e) {} }",
    ),
    (
        "BigInt toLocaleString at the cap",
        "const b = -((1n << 65500n) + 12345n); for (;;) { try { b.toLocaleString() } catch (e) {} }",
    ),
    (
        "BigInt in a template at the cap",
        "const b = (1n << 65500n) + 12345n; let s; for (;;) { s = `${b}` }",
    ),
    (
        "BigInt + '' at the cap",
        "const b = (1n << 65500n) + 12345n; let s; for (;;) { s = b + '' }",
    ),
    (
        "String(BigInt) at the cap",
        "const b = (1n << 65500n) + 12345n; let s; for (;;) { s = String(b) }",
    ),
    (
        "BigInt as a property key at the cap",
        "const b = (1n << 65500n) + 12345n, o = {}; for (;;) { o[b] }",
    ),
    (
        "BigInt multiply and divide",
        "let a = (1n << 30000n) - 1n; for (;;) { try { a = a * a / (a - 1n) + a } catch (e) {} }",
    ),
    (
        "BigInt multiply at the cap",
        "const a = (1n << 32700n) - 12345n; for (;;) { a * a }",
    ),
    (
        "BigInt divide and remainder at the cap",
        "const a = (1n << 65400n) - 1n, b = (1n << 32700n) - 12345n; for (;;) { a / b; a % b }",
    ),
    ("BigInt ** at the cap", "for (;;) { 3n ** 41000n }"),
    (
        "BigInt past the cap, caught",
        "const a = (1n << 65000n) - 1n; for (;;) { try { a * a } catch (e) {} try { 2n ** 70000n } catch (e) {} }",
    ),
    (
        "BigInt from the longest decimal text",
        "const s = '9'.repeat(19400); for (;;) { BigInt(s) }",
    ),
    (
        "BigInt from a long decimal text",
        "const s = '9'.repeat(300000); for (;;) { try { BigInt(s) } catch (e) {} }",
    ),
    (
        "BigInt from a huge decimal text",
        "const s = '9'.repeat(8e6); for (;;) { try { BigInt(s) } catch (e) {} }",
    ),
    (
        "BigInt compared with a huge decimal text",
        "const s = '9'.repeat(8e6); for (;;) { 1n == s; 1n < s }",
    ),
    (
        "BigInt from a huge text of leading zeros",
        "const s = '0'.repeat(8e6) + '1'; for (;;) { BigInt(s) }",
    ),
    (
        "BigInt.asUintN of a long decimal text",
        "const s = { valueOf: () => '9'.repeat(300000) }; for (;;) { try { BigInt.asUintN(64, s) } catch (e) {} }",
    ),
    (
        "string indexOf of one character in a long text",
        "const h = 'a'.repeat(2 ** 25); for (;;) { try { h.indexOf('b') } catch (e) {} }",
    ),
    (
        "string split of a long text by a short separator",
        "const h = 'ab'.repeat(2 ** 24); for (;;) { try { h.split('ba', 3) } catch (e) {} }",
    ),
    (
        "String toUpperCase of a long text",
        "const h = 'a'.repeat(2 ** 25); for (;;) { try { h.toUpperCase() } catch (e) {} }",
    ),
    (
        // One BMP character, then surrogate pairs: the index moves by two from an odd start.
        "String toUpperCase of a long text of astral characters",
        "const h = 'a' + '\\ud801\\udc28'.repeat(2 ** 22); for (;;) { try { h.toUpperCase() } catch (e) {} }",
    ),
    (
        "encodeURIComponent of a long text",
        "const h = '\\u00e9'.repeat(2 ** 25); for (;;) { try { encodeURIComponent(h) } catch (e) {} }",
    ),
    (
        "JSON.stringify of a long string",
        "const h = 'a'.repeat(2 ** 25); for (;;) { try { JSON.stringify({ h }) } catch (e) {} }",
    ),
    (
        "JSON.stringify of a long string through a replacer",
        "const h = 'a'.repeat(2 ** 25); for (;;) { try { JSON.stringify(1, () => h) } catch (e) {} }",
    ),
    (
        "RegExp scan of a long text",
        "const h = 'a'.repeat(2 ** 25); for (;;) { try { /b/.test(h) } catch (e) {} }",
    ),
    (
        "Float64Array sort",
        "const a = new Float64Array(3.5e6); for (;;) { try { a.sort() } catch (e) {} }",
    ),
    (
        "Float64Array toSorted",
        "const a = new Float64Array(3.5e6); for (;;) { try { a.toSorted() } catch (e) {} }",
    ),
    (
        "typed array sort at the cap",
        "const a = new Float64Array(1 << 20); for (let i = 0; i < 4096; i++) a[i * 256] = -i; for (;;) { try { a.sort() } catch (e) {} }",
    ),
    (
        "array sort without comparator",
        "const a = new Array(2e6); for (;;) { try { a.sort() } catch (e) {} }",
    ),
    (
        "flat(Infinity) over sparse arrays",
        "const a = []; a.length = 8e6; const b = [a, a, a, a]; for (;;) { try { b.flat(Infinity) } catch (e) {} }",
    ),
    (
        "flatMap over a sparse array",
        "const a = []; a.length = 8e6; for (;;) { try { a.flatMap((x) => x) } catch (e) {} }",
    ),
    (
        "concat of sparse arrays",
        "const a = []; a.length = 8e6; for (;;) { try { a.concat(a, a, a) } catch (e) {} }",
    ),
    (
        "concat at the cap",
        "const a = []; a.length = 4e6; for (;;) { try { a.concat(a) } catch (e) {} }",
    ),
    (
        "join of a sparse array",
        "const a = []; a.length = 4e6; for (;;) { try { a.join() } catch (e) {} }",
    ),
    (
        "join of nested sparse arrays",
        "const a = []; a.length = 4e6; const b = new Array(64).fill(a); for (;;) { try { b.join() } catch (e) {} }",
    ),
    (
        "new Function of 30,000 lets",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         for (;;) { try { new Function(src) } catch (e) {} }",
    ),
    (
        "Function of the longest accepted source",
        "let src = ''; for (let i = 0; src.length < 65000; i++) src += 'let a' + i + ' = 0;\\n'; \
         for (;;) { try { Function(src) } catch (e) {} }",
    ),
    (
        "eval of 30,000 lets",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         for (;;) { try { eval(src) } catch (e) {} }",
    ),
    (
        "indirect eval of 30,000 lets",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         const e2 = eval; for (;;) { try { e2(src) } catch (e) {} }",
    ),
    (
        "AsyncFunction constructor",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         const C = (async function () {}).constructor; for (;;) { try { C(src) } catch (e) {} }",
    ),
    (
        "GeneratorFunction constructor",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         const C = (function* () {}).constructor; for (;;) { try { new C('a', src) } catch (e) {} }",
    ),
    (
        "AsyncGeneratorFunction constructor",
        "const src = Array.from({ length: 30000 }, (_, i) => 'let a' + i + ' = 0;').join('\\n'); \
         const C = (async function* () {}).constructor; for (;;) { try { C(src) } catch (e) {} }",
    ),
    (
        "JSON.stringify of a big array",
        "const a = new Array(1e6).fill(1.5); for (;;) { try { JSON.stringify(a) } catch (e) {} }",
    ),
    (
        "JSON.parse of a big text",
        "const s = '[' + '1,'.repeat(1e6) + '1]'; for (;;) { try { JSON.parse(s) } catch (e) {} }",
    ),
    (
        "String repeat",
        "for (;;) { try { 'ab'.repeat(2 ** 23) } catch (e) {} }",
    ),
    (
        "String padEnd",
        "for (;;) { try { ''.padEnd(2 ** 24, 'xy') } catch (e) {} }",
    ),
    (
        "String trimLeft (an alias of trimStart)",
        "const s = ' '.repeat(8e6) + 'x'; for (;;) { try { s.trimLeft() } catch (e) {} }",
    ),
    (
        "String trimRight (an alias of trimEnd)",
        "const s = 'x' + ' '.repeat(8e6); for (;;) { try { s.trimRight() } catch (e) {} }",
    ),
    (
        "String normalize",
        "const s = '\\u00e9'.repeat(1e6); for (;;) { try { s.normalize('NFD') } catch (e) {} }",
    ),
    (
        "typed array join",
        "const a = new Float64Array(3e6).fill(Math.PI); for (;;) { try { a.join() } catch (e) {} }",
    ),
    (
        "typed array indexOf",
        "const a = new Float64Array(4e6); for (;;) { try { a.indexOf(1) } catch (e) {} }",
    ),
    (
        "typed array set",
        "const a = new Uint8Array(3e7), b = new Uint8Array(3e7); for (;;) { try { a.set(b) } catch (e) {} }",
    ),
    (
        "Object.keys of a big object",
        "const o = {}; for (let i = 0; i < 2e5; i++) o['k' + i] = i; for (;;) { try { Object.keys(o) } catch (e) {} }",
    ),
    (
        "typed array from a big array-like",
        "const o = { length: 5e7 }; for (;;) { try { new Uint8Array(o) } catch (e) {} }",
    ),
    (
        "typed array from() a big array-like",
        "const o = { length: 5e7 }; for (;;) { try { Uint8Array.from(o) } catch (e) {} }",
    ),
    (
        "reverse of a sparse array-like",
        "const o = { length: 4e6 }; for (;;) { try { Array.prototype.reverse.call(o) } catch (e) {} }",
    ),
    (
        "splice of a sparse array",
        "const a = []; a.length = 4e6; a[0] = 1; for (;;) { try { a.splice(0, 1); a[0] = 1; a.length = 4e6 } catch (e) {} }",
    ),
    (
        "Object.keys of a big array",
        "const a = new Array(2e6).fill(0); for (;;) { try { Object.keys(a) } catch (e) {} }",
    ),
    (
        "Object.assign from a big typed array",
        "const a = new Uint8Array(3e7); for (;;) { try { Object.assign({}, a) } catch (e) {} }",
    ),
    (
        "Array.from of a big array-like",
        "const o = { length: 3e6 }; for (;;) { try { Array.from(o) } catch (e) {} }",
    ),
    // Natives the engine meters that the old guards never wrapped: memory-bound walks, one
    // exec per match, normalization's quadratic sort of combining marks, allocations.
    (
        "typed array fill",
        "const a = new Uint8Array(3e7); for (;;) { a.fill(1) }",
    ),
    (
        "a big typed array allocated in a loop",
        "let a; for (;;) { a = new Float64Array(4e6) }",
    ),
    (
        "dense array indexOf",
        "const a = new Array(2e6).fill(0); for (;;) { a.indexOf(1) }",
    ),
    (
        "dense array slice",
        "const a = new Array(1e6).fill(0); for (;;) { a.slice() }",
    ),
    (
        "global regexp replace with a match per character",
        "const s = 'a'.repeat(2e5); for (;;) { s.replace(/a/g, 'b') }",
    ),
    (
        "split into characters",
        "const s = 'a'.repeat(2e5); for (;;) { s.split('') }",
    ),
    (
        "normalize a long run of combining marks",
        "const s = 'a' + '\\u0316\\u0301'.repeat(2e5); for (;;) { s.normalize('NFC') }",
    ),
    (
        "localeCompare of long texts",
        "const a = '\\u00e9'.repeat(2e6), b = a + 'x'; for (;;) { a.localeCompare(b) }",
    ),
    (
        "escape and unescape of a long text",
        "const s = '\\u00e9'.repeat(4e6); for (;;) { unescape(escape(s)) }",
    ),
    (
        "decodeURIComponent of a long text",
        "const s = '%C3%A9'.repeat(4e6); for (;;) { decodeURIComponent(s) }",
    ),
    (
        "Object.entries of a big object",
        "const o = {}; for (let i = 0; i < 2e5; i++) o['k' + i] = i; for (;;) { Object.entries(o) }",
    ),
    (
        "direct eval of a long program",
        "const src = 'let x = 0;\\n'.repeat(30000); for (;;) { try { eval('{' + src + '}') } catch (e) {} }",
    ),
];

/// Ordinary uses of every expensive built-in, with their standard results.
const ORDINARY: &[(&str, &str)] = &[
    ("'abcabc'.indexOf('ca')", "2"),
    ("'abcabc'.indexOf('c', 3)", "5"),
    ("'abcabc'.lastIndexOf('bc')", "4"),
    ("'abcabc'.lastIndexOf('bc', 3)", "1"),
    ("'abcabc'.includes('cab')", "true"),
    (
        "'abc'.indexOf.name + ''.indexOf.length + ''.split.length + ''.replace.name",
        r#""indexOf12replace""#,
    ),
    ("'a,b,,c'.split(',')", r#"["a","b","","c"]"#),
    ("'a,b,,c'.split(',', 2)", r#"["a","b"]"#),
    ("'abc'.split('')", r#"["a","b","c"]"#),
    ("'abc'.split()", r#"["abc"]"#),
    ("'a1b2'.split(/\\d/)", r#"["a","b",""]"#),
    (
        "'abcabc'.replace('b', '[$&|$$|$`|$\\'|$1]')",
        r#""a[b|$|a|cabc|$1]cabc""#,
    ),
    (
        "'abcabc'.replace('b', (m, p, s) => m + p + s.length)",
        r#""ab16cabc""#,
    ),
    ("'abcabc'.replaceAll('b', '<$&>')", r#""a<b>ca<b>c""#),
    ("'abcabc'.replaceAll('bc', (m, p) => p)", r#""a1a4""#),
    ("'aaa'.replaceAll(/a/g, 'b')", r#""bbb""#),
    (
        "(() => { try { 'a'.replaceAll(/a/, 'b') } catch (e) { return e.name } })()",
        r#""TypeError""#,
    ),
    (
        "(() => { try { 'a'.includes(/a/) } catch (e) { return e.name } })()",
        r#""TypeError""#,
    ),
    (
        "'x'.replace({ [Symbol.replace]: (s, r) => s + r }, 'y')",
        r#""xy""#,
    ),
    ("[1, [2, [3]]].flat(Infinity)", "[1,2,3]"),
    ("[1, [2, [3]]].flat()", "[1,2,[3]]"),
    ("[1, , 3].flat()", "[1,3]"),
    ("[1, 2].flatMap((x) => [x, [x * 2]])", "[1,[2],2,[4]]"),
    (
        "[[].flat.length, [].flatMap.length, [].flat.name]",
        r#"[0,1,"flat"]"#,
    ),
    ("[1].concat([2], 3, [[4]])", "[1,2,3,[4]]"),
    (
        "(() => { const a = []; a.length = 5e6; a.push(1); return [a.length, a.at(-1), a.pop(), a.length] })()",
        "[5000001,1,1,5000000]",
    ),
    (
        "Array.from(new Float64Array([3, -1, 2]).sort())",
        "[-1,2,3]",
    ),
    (
        "Array.from(new Int8Array([3, -1, 2]).toSorted((a, b) => b - a))",
        "[3,2,-1]",
    ),
    ("new Uint8Array([1, 2, 3]).join('-')", r#""1-2-3""#),
    ("[10, 9, 1].sort()", "[1,10,9]"),
    ("new Function('a', 'b', 'return a + b')(1, 2)", "3"),
    ("Function('return this')() === globalThis", "true"),
    (
        "[Function.name, Function.length, Function.prototype.constructor === Function]",
        r#"["Function",1,true]"#,
    ),
    (
        "[(() => 1) instanceof Function, Function instanceof Function, {} instanceof Function]",
        "[true,true,false]",
    ),
    (
        "(async function () {}).constructor === Object.getPrototypeOf(async function () {}).constructor",
        "true",
    ),
    (
        "(async function () {}).constructor.name",
        r#""AsyncFunction""#,
    ),
    (
        "Object.getPrototypeOf((async function () {}).constructor) === Function",
        "true",
    ),
    (
        "(async function () {}).constructor('return 1')() instanceof Promise",
        "true",
    ),
    (
        "[...(function* () {}).constructor('yield 1; yield 2')()]",
        "[1,2]",
    ),
    (
        "(() => { class F extends Function {} const f = new F('return 7'); return [f(), f instanceof F] })()",
        "[7,true]",
    ),
    ("eval('1 + 1')", "2"),
    ("[eval(5), eval.name, eval.length]", r#"[5,"eval",1]"#),
    (
        "(255n).toString(16) + (2n ** 70n).toString() + (-5n).toLocaleString()",
        r#""ff1180591620717411303424-5""#,
    ),
    (
        "JSON.stringify({ a: [1, { b: 2 }], c: undefined })",
        r#""{\"a\":[1,{\"b\":2}]}""#,
    ),
    (
        "JSON.stringify({ a: 1, b: 2 }, ['b'], 1)",
        r#""{\n \"b\": 2\n}""#,
    ),
    ("JSON.stringify({ toJSON() { return 5 } })", r#""5""#),
    (
        "JSON.parse('[1, {\"a\": 2}]', (k, v) => typeof v === 'number' ? v * 10 : v)",
        r#"[10,{"a":20}]"#,
    ),
    (
        "'ab'.repeat(3) + 'x'.padStart(3, '-') + '\\u0065\\u0301'.normalize().length",
        r#""ababab--x1""#,
    ),
    ("Object.keys({ a: 1, b: 2 })", r#"["a","b"]"#),
    (
        "[Object.keys([5, 6]), Object.entries(new Uint8Array([7])), Object.assign({}, [1], { b: 2 }), Reflect.ownKeys([1]), Object.isFrozen(Object.freeze([1])), Object.isSealed(new Array(3e5).fill(0))]",
        r#"[["0","1"],[["0",7]],{"0":1,"b":2},["0","length"],true,false]"#,
    ),
    (
        "JSON.stringify({ a: 1, b: [2] }, (k, v) => typeof v === 'number' ? v + 1 : v)",
        r#""{\"a\":2,\"b\":[3]}""#,
    ),
    (
        "JSON.stringify({ a: 1 }, 5) + JSON.stringify([new Date(0)]) + JSON.stringify('x', null, '\t')",
        r#""{\"a\":1}[\"1970-01-01T00:00:00.000Z\"]\"x\"""#,
    ),
    (
        "['x'.repeat(0), 'ab'.repeat('2'), 'a'.padEnd(3, 'bc'), 'a'.padStart(0), 'a'.padStart(3)]",
        r#"["","abab","abc","a","  a"]"#,
    ),
    (
        "(() => { try { 'a'.repeat(-1) } catch (e) { return e.name } })()",
        r#""RangeError""#,
    ),
    (
        "[BigInt(' 12 '), BigInt(3), BigInt({ valueOf: () => '7' }), BigInt.asUintN(8, 257n), BigInt.asIntN(8, '255')].join()",
        r#""12,3,7,1,-1""#,
    ),
    (
        "[1n.constructor === BigInt, Object(1n) instanceof BigInt, BigInt.name, BigInt.length, typeof BigInt.prototype.toString]",
        r#"[true,true,"BigInt",1,"function"]"#,
    ),
    (
        "(() => { try { new BigInt(1) } catch (e) { return e.name } })()",
        r#""TypeError""#,
    ),
    // Past the 64 Kbit cap, a catchable RangeError; the run goes on.
    (
        "(() => { const caught = []; for (const f of [() => 1n << 70000n, () => 2n ** 70000n, () => ((1n << 40000n) * (1n << 40000n)), () => BigInt('9'.repeat(20000))]) { try { f() } catch (e) { caught.push(e instanceof RangeError && e.message) } } return [caught, (1n << 65534n) > 0n, -(1n << 65534n) < 0n] })()",
        r#"[["BigInt is too large to allocate","BigInt is too large","BigInt is too large to allocate","BigInt is too large to allocate"],true,true]"#,
    ),
    (
        "['ABC'.toLowerCase(), 'i'.toLocaleUpperCase(), 'a'.localeCompare('b'), ' x '.trim(), encodeURIComponent('a b&'), decodeURI('%41')]",
        r#"["abc","I",-1,"x","a%20b%26","A"]"#,
    ),
    (
        "[new Uint8Array(2).constructor === Uint8Array, new Uint8Array([1, 2]) instanceof Uint8Array]",
        "[true,true]",
    ),
    (
        "Array.from(new Int16Array({ length: 2, 0: 5 })).concat(Uint8Array.BYTES_PER_ELEMENT, Uint8Array.name, Uint8Array.length)",
        r#"[5,0,1,"Uint8Array",3]"#,
    ),
    (
        "Array.from(new Uint8Array(new Uint8Array([1, 2, 3]).buffer, 1))",
        "[2,3]",
    ),
    (
        "Array.from(Uint8Array.from({ length: 2, 0: 9 })).concat(Array.from(new Uint8Array(new Set([4]))))",
        "[9,0,4]",
    ),
    (
        "(() => { class B extends Uint8Array {} const b = new B(2); return [b instanceof B, b.length, b.slice(1) instanceof B] })()",
        "[true,2,true]",
    ),
    (
        "(() => { try { Uint8Array(1) } catch (e) { return e.name } })()",
        r#""TypeError""#,
    ),
    ("Array.from({ length: 3 }, (_, i) => i)", "[0,1,2]"),
];

/// Long string searches (once run in JS by the guards, now native and metered): they must agree
/// with the regexp engine.
const LONG_SEARCHES: &str = r"
const pre = 'ab'.repeat(3000), needle = 'a'.repeat(2000) + 'c';
const s = pre + needle + 'xyz' + needle + pre;
const re = new RegExp(needle), reg = new RegExp(needle, 'g');
const template = '[$&|$$|$`|$\'|$1|$<x>|$0|$]';
const calls = [];
const checks = [
  s.indexOf(needle) === 6000,
  s.indexOf(needle, 6001) === 8004,
  s.indexOf(needle, 9000) === -1,
  s.lastIndexOf(needle) === 8004,
  s.lastIndexOf(needle, 8003) === 6000,
  s.lastIndexOf(needle, -5) === -1,
  s.includes(needle) && !s.includes(needle, 8005),
  JSON.stringify(s.split(needle)) === JSON.stringify([pre, 'xyz', pre]),
  JSON.stringify(s.split(needle, 1)) === JSON.stringify([pre]),
  s.replace(needle, template) === s.replace(re, template),
  s.replaceAll(needle, template) === s.replace(reg, template),
  s.replaceAll(needle, (m, p, str) => { calls.push([m === needle, p, str === s]); return '#' }) === pre + '#xyz#' + pre,
  JSON.stringify(calls) === '[[true,6000,true],[true,8004,true]]',
  String.prototype.indexOf.call({ toString: () => s }, { toString: () => needle }) === 6000,
];
// A short needle in a long text, at the edges of what the guards once searched in chunks.
const filler = 'x'.repeat(7e6);
for (const p of [0, 1398098, 1398101, 2796200, 4194301, 5592400, 7e6 - 6]) {
  const h = filler.slice(0, p) + 'needle' + filler.slice(p + 6);
  checks.push(h.indexOf('needle') === p, h.lastIndexOf('needle') === p, h.includes('needle'),
    h.indexOf('needle', p + 1) === -1, p === 0 || h.lastIndexOf('needle', p - 1) === -1,
    h.split('needle').length === 2 && h.split('needle')[0].length === p,
    h.replace('needle', '<$&>') === filler.slice(0, p) + '<needle>' + filler.slice(p + 6),
    h.replaceAll('needle', 'N').length === 7e6 - 5);
}
return checks.map((ok, i) => ok ? 0 : i + 1).filter((i) => i);
";

fn outcome(step: &LegEnd) -> String {
    match step {
        LegEnd::Completed { value, .. } => format!("completed {value}"),
        LegEnd::Failed { error, .. } => format!("failed {error:?}"),
        LegEnd::Suspended { reason, .. } => format!("suspended {reason:?}"),
    }
}

/// Where the cells run: a VM thread, then a worker process of the sandbox's test worker.
fn placements() -> [(&'static str, Placement); 2] {
    let pool = WorkerPool::new(WorkerPoolConfig {
        command: Some(WorkerCommand::new(env!(
            "CARGO_BIN_EXE_codemode-test-worker"
        ))),
        max_workers: 4,
        warm_workers: 1,
        ..WorkerPoolConfig::default()
    });
    [
        ("thread", Placement::Thread),
        ("process", Placement::Process(pool)),
    ]
}

#[test]
fn hostile_builtins_stop_within_the_grace() {
    let mut failures = Vec::new();
    let mut report = Vec::new();
    let wall_checked = timing::wall_time_checked("hostile_builtins_stop_within_the_grace");
    for (mode, placement) in placements() {
        cells_stop_within_the_grace(mode, &placement, wall_checked, &mut failures, &mut report);
    }
    // Each cell's outcome, CPU and wall time (`--nocapture` shows them on success too).
    #[allow(
        clippy::print_stderr,
        reason = "the per-cell figures docs/builtins-audit.md quotes"
    )]
    {
        eprintln!("{report:#?}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

fn cells_stop_within_the_grace(
    mode: &str,
    placement: &Placement,
    wall_checked: bool,
    failures: &mut Vec<String>,
    report: &mut Vec<String>,
) {
    let generous = Duration::from_secs(60);
    let run_cell = |program: &str, timeout: Duration| run_cell(program, timeout, placement);
    for (expression, expected) in ORDINARY {
        let got = outcome(&run_cell(&format!("return {expression}"), generous));
        if got != format!("completed {expected}") {
            failures.push(format!("{mode}: {expression}: {got}, expected {expected}"));
        }
    }
    let got = outcome(&run_cell(LONG_SEARCHES, generous));
    if got != "completed []" {
        failures.push(format!("{mode}: long string searches: {got}"));
    }

    // Cells whose cost is in compiling: built at run time (they are too large for a constant).
    let lets = |count: usize| {
        (0..count)
            .map(|i| format!("let a{i}=0\n"))
            .collect::<String>()
    };
    let compiled = [
        // Just under the names bound: the worst that compiles.
        ("a program of 9,999 let lines", lets(9_999)),
        (
            "eval of 30,000 let lines, in a loop",
            format!(
                "const src = {:?}; for (;;) {{ try {{ eval(src) }} catch (e) {{}} }}",
                lets(30_000)
            ),
        ),
        (
            "new Function of 30,000 let lines, in a loop",
            format!(
                "const src = {:?}; for (;;) {{ try {{ new Function(src) }} catch (e) {{}} }}",
                lets(30_000)
            ),
        ),
    ];
    let owned: Vec<(&str, &str)> = compiled.iter().map(|(n, p)| (*n, p.as_str())).collect();
    // Past the names bound, the program is refused before anything is built.
    match run_cell(&lets(80_000), TIMEOUT) {
        LegEnd::Failed {
            error: RunError::ProgramTooComplex { .. },
            ..
        } => {}
        other => failures.push(format!("{mode}: 80,000 let lines: {}", outcome(&other))),
    }
    // `CODEMODE_HOSTILE_ONLY=text` runs only the cells whose name contains it (for measuring).
    let only = std::env::var("CODEMODE_HOSTILE_ONLY").unwrap_or_default();
    for (name, program) in CELLS
        .iter()
        .copied()
        .chain(owned)
        .filter(|(name, _)| name.contains(only.as_str()))
    {
        let before = settled_cpu();
        let started = Instant::now();
        let step = run_cell(program, TIMEOUT);
        let wall = started.elapsed();
        // A VM stuck in a native call finishes it on its own thread after the driver gave up:
        // that tail is counted too, once the process is idle again.
        let cpu = settled_cpu()
            .zip(before)
            .map(|(after, before)| after - before);
        report.push(format!(
            "{mode}: {name}: {} cpu {cpu:?} wall {wall:?}",
            outcome(&step)
        ));
        if !matches!(
            step,
            LegEnd::Failed {
                error: RunError::Timeout,
                ..
            }
        ) {
            failures.push(format!("{mode}: {name}: {}", outcome(&step)));
        }
        // In-process, the CPU a stuck VM thread keeps using; out of process, the host's own
        // (the worker is killed at the deadline plus the grace, so its CPU ends there).
        if let Some(cpu) = cpu
            && cpu > TIMEOUT + GRACE
        {
            failures.push(format!("{mode}: {name}: used {cpu:?} of CPU"));
        }
        // The result is on time in both (a generous bound: the grace plus two seconds).
        if wall_checked && wall > TIMEOUT + DEADLINE_GRACE + WALL_MARGIN {
            failures.push(format!("{mode}: {name}: answered after {wall:?}"));
        }
    }
}
