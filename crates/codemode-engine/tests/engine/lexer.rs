//! The pre-compile checks of a program: module access and wrapper escapes (`check_program`,
//! `check_module_access`, `check_body`), against fixed cases and against QuickJS itself.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use codemode_engine::{MAX_NESTING, RunError, check_body, check_module_access, check_program};
use proptest::prelude::*;
use rquickjs::{Context, Ctx, Function, Runtime, Value};

/// `ok`, `module access`, or the syntax error's text.
fn verdict(result: Result<(), RunError>) -> String {
    match result {
        Ok(()) => "ok".to_owned(),
        Err(RunError::ModuleAccess) => "module access".to_owned(),
        Err(RunError::Syntax(text)) => text,
        Err(other) => format!("unexpected error {other:?}"),
    }
}

fn check(program: &str, expect: &str) {
    assert_eq!(
        verdict(check_program(program)),
        expect,
        "program: {program:?}"
    );
}

/// The text QuickJS evaluates for `new AsyncFunction(program)`.
fn wrapped(program: &str) -> String {
    format!("(async function anonymous(\n) {{\n{program}\n}})")
}

/// A QuickJS context with `mark()`, which records that code ran.
struct Oracle {
    context: Context,
    ticks: Arc<AtomicU64>,
    _runtime: Runtime,
}

/// What QuickJS made of a wrapped program.
#[derive(Debug, PartialEq, Eq)]
enum Compiled {
    /// A syntax error: nothing ran.
    SyntaxError,
    /// Exactly the wrapper function, and nothing ran.
    TheFunction,
    /// Something else: code outside the function ran or was evaluated.
    Escaped(String),
}

impl Oracle {
    fn new() -> Self {
        let runtime = Runtime::new().expect("runtime");
        runtime.set_memory_limit(64 << 20);
        // Programs come from a vocabulary without loops, but `for (;;)` can be assembled: stop
        // any evaluation after a fixed number of interrupt polls.
        let ticks = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&ticks);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            counter.fetch_add(1, Ordering::Relaxed) > 20
        })));
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            ctx.eval::<(), _>(
                "globalThis.__marks = 0; globalThis.mark = function () { globalThis.__marks++; };",
            )
            .expect("install mark");
        });
        Oracle {
            context,
            ticks,
            _runtime: runtime,
        }
    }

    fn compile(&self, program: &str) -> Compiled {
        self.ticks.store(0, Ordering::Relaxed);
        let source = wrapped(program);
        let expected = source.get(1..source.len() - 1).expect("wrapper").to_owned();
        self.context.with(|ctx| {
            ctx.eval::<(), _>("globalThis.__marks = 0;").expect("reset");
            let result = ctx.eval::<Value<'_>, _>(source.as_str());
            let marks: i32 = ctx.globals().get("__marks").expect("marks");
            match result {
                Err(rquickjs::Error::Exception) => {
                    let name = exception_name(&ctx);
                    if name == "SyntaxError" && marks == 0 {
                        Compiled::SyntaxError
                    } else {
                        Compiled::Escaped(format!("{name} thrown, {marks} marks"))
                    }
                }
                Err(other) => Compiled::Escaped(format!("error {other}")),
                Ok(value) => {
                    let text = value.as_function().and_then(|f| function_source(&ctx, f));
                    if marks == 0 && text.as_deref() == Some(expected.as_str()) {
                        Compiled::TheFunction
                    } else {
                        Compiled::Escaped(format!("{marks} marks, value source {text:?}"))
                    }
                }
            }
        })
    }
}

fn exception_name(ctx: &Ctx<'_>) -> String {
    let exception = ctx.catch();
    exception
        .as_object()
        .and_then(|object| object.get::<_, String>("name").ok())
        .unwrap_or_else(|| format!("{exception:?}"))
}

fn function_source<'js>(ctx: &Ctx<'js>, function: &Function<'js>) -> Option<String> {
    let to_string: Function<'js> = ctx
        .eval("Function.prototype.toString")
        .expect("Function.prototype.toString");
    to_string
        .call((rquickjs::function::This(function.clone()),))
        .ok()
}

#[test]
fn refuses_module_access_hidden_from_a_naive_scanner() {
    for program in [
        // `/` after a postfix `++`/`--` divides.
        "a++ / import('fs') / 1",
        "a-- / import('fs') / 1",
        "a\n++b / import('fs') / 1",
        // `}` of an object literal, then division.
        "x = {} / import('fs') / 1",
        "x = { a: 1 } / import('fs') / 1",
        "({}) / import(\"fs\")",
        "x = function () {} / import('fs') / 1",
        "x = class {} / import('fs') / 1",
        "x = a ? {} : {} / import('fs') / 1",
        "f({} / import('fs') / 1)",
        // `)` of a statement header, then a regular expression.
        "if (x) /re/.test(import.meta)",
        "while (x) /'/.test(a); import('x')",
        "for (;;) /'/; import('x')",
        // `)` of a call: division.
        "f(x) / import('fs') / 1",
        // A block, then a regular expression containing a quote.
        "{}/'/; import('x')",
        "if (a) {} /'/; import('x')",
        "function f() {} /'/; import('x')",
        "class A {} /'/; import('x')",
        "label: {} /'/; import('x')",
        "switch (a) { case 1: {} /'/; import('x') }",
        "x = () => {}\n/'/; import('x')",
        "/'/; import('x')",
        "return /'/; import('x')",
        "return\n{}/'/; import('x')",
        "typeof /'/; import('x')",
        // A name a declaration binds cannot be divided: the line after it starts a statement.
        "var x\n/'/; import('x')",
        "let x\n/'/; import('x')",
        "var a = 1, b\n/'/; import('x')",
        "L: for (;;) { break L\n/'/; import('x') }",
        "L: for (;;) { continue L\n/'/; import('x') }",
        "var \\u0061\n/'/; import('x')",
        // Templates, nested.
        "`${ `${import('x')}` }`",
        "`a ${ `b ${ `c ${ import('x') }` }` } d`",
        "`${ {a: `${1}`}.a }${import('x')}`",
        // `await`, `yield`, `of`: keyword or identifier, read both ways.
        "x = await /'/; import('x'); '/",
        "x = yield /'/; import('x'); '/",
        "for (const y of /'/.exec(a)) import('x'); '/",
        "function f() { await /'/; import('x'); '/ }",
        // Line terminators QuickJS knows.
        "// comment\u{2028}import('x')",
        "// comment\u{2029}import('x')",
        "x = 1 <!-- comment\nimport('x')",
        "return\u{2028}{}/'/; import('x')",
        // Escapes in identifiers.
        "\\u0069mport('x')",
        "\\u{69}mport('x')",
        "re\\u0071uire('x')",
        // Optional chaining is not a conditional.
        "a?.b / import('x') / 1",
        "a ? .5 : /'/; import('x')",
        // Private names, numbers, calls on require.
        "class A { #a = 1; m() { return this.#a / import('x') / 1 } }",
        "x = 1.5 / import('x') / 2",
        "require`fs`",
        "require?.('fs')",
        "import",
    ] {
        check(program, "module access");
    }
}

#[test]
fn accepts_programs_that_only_mention_modules() {
    for program in [
        "const s = 'import fs from \"fs\"'; return s;",
        "const s = \"require('fs')\";",
        "// import fs from 'fs'\nreturn 1;",
        "/* import('fs') */ return 1;",
        "const important = 1; const imported = important; return imported;",
        "const requireX = (a) => a; return requireX(1);",
        "return obj.import('x');",
        "return obj?.import('x');",
        "return obj.require('x');",
        "return { import: 1, require: 2 };",
        "const r = /import\\('x'\\)/; return r.test('x');",
        "const r = /[/]import(/; return 1;",
        "const r = /[\\]/]import(/; return 1;",
        "return a / import_count / 2;",
        "`text import('x') require('y')`",
        "`${'import(\"x\")'}`",
        "const require = 1; return require;",
        "return typeof /import/;",
        "return x => x.import;",
        "if (a) /import('x')/.test(b)",
        "x = {} / 2; // import('x')",
        "x = a++ / 2 / 3; // import('x')",
        "{} /import('x')/.test(a)",
        "x = `${ `${'import(x)'}` }`",
        "<!-- import('x')\nreturn 1",
        "x = 1\n--> import('x')\nreturn 1",
        "/* a\n*/--> import('x')\nreturn 1",
    ] {
        check(program, "ok");
    }
}

#[test]
fn refuses_bodies_that_close_the_wrapper() {
    let at = |line: usize, column: usize| {
        format!(
            "SyntaxError: unexpected `}}` closes the code mode function body (line {line}, column {column})"
        )
    };
    let oracle = Oracle::new();
    // Each of these really escapes in QuickJS.
    for (program, line, column) in [
        ("}); while(false){}; (async function(){ return 1", 1, 1),
        ("})(); (async function(){", 1, 1),
        ("return 1\n}); mark(); (function () {", 2, 1),
        // The `}` hidden where a naive scanner sees a regular expression or a string.
        ("x = a++ / 1 }); mark(); (function () { a = b /1/ 2", 1, 13),
        ("x = {} / 1 }); mark(); (function () { a = b /1/ 2", 1, 12),
        ("if (x) /'/}); mark(); (function () { a = '/'", 1, 11),
        ("{}/'/}); mark(); (function () { a = '/'", 1, 6),
        ("`${ `${1}` }`}); mark(); (function () {", 1, 14),
        (
            "x = await /'/}); mark(); (async function () { a = '/'",
            1,
            14,
        ),
    ] {
        check(program, &at(line, column));
        assert!(
            matches!(oracle.compile(program), Compiled::Escaped(_)),
            "program: {program:?}"
        );
    }
    check(
        ") mark(); (function () {",
        "SyntaxError: unexpected `)` closes the code mode function body (line 1, column 1)",
    );
    check(
        "f(]",
        "SyntaxError: unexpected `]`: the `(` at line 1, column 2 is not closed (line 1, column 3)",
    );
    check(
        "x = [1, 2)",
        "SyntaxError: unexpected `)`: the `[` at line 1, column 5 is not closed (line 1, column 10)",
    );
    // Ending inside something that would swallow the wrapper's `\n})`.
    check(
        "return 1 /* open",
        "SyntaxError: unterminated block comment (line 1, column 17)",
    );
    check(
        "return `open",
        "SyntaxError: unterminated template literal (line 1, column 8)",
    );
    check(
        "return `open ${ 1",
        "SyntaxError: unterminated template literal (line 1, column 14)",
    );
    check(
        "return /open",
        "SyntaxError: unterminated regular expression literal (line 1, column 8)",
    );
    check(
        "return 'open",
        "SyntaxError: unterminated string literal (line 1, column 8)",
    );
    check(
        "return 'open\\",
        "SyntaxError: unterminated string literal (line 1, column 8)",
    );
}

#[test]
fn bounds_nesting_and_ambiguity() {
    let deep = "(".repeat(MAX_NESTING + 1);
    assert!(
        verdict(check_body(&deep)).contains("brackets nest deeper than 10000 levels"),
        "{}",
        verdict(check_body(&deep))
    );
    // Every `await /a/` forks the scan in two readings, which merge again at the `;`.
    check(&"x = await /a/;\n".repeat(1000), "ok");
    // Here they never merge: the division reading opens a `[` and a `(` that stay open, so
    // each `await` doubles the readings.
    check(&"await /[/]/(".repeat(4), "ok");
    let ambiguous = "await /[/]/(".repeat(6);
    assert!(
        verdict(check_program(&ambiguous)).starts_with(
            "SyntaxError: too many ways to read the `/` after `await`, `yield` or `of`"
        ),
        "{}",
        verdict(check_program(&ambiguous))
    );
    assert!(check_module_access(&ambiguous).is_err());
}

/// Programs that must be accepted, and that QuickJS compiles to exactly the wrapper function.
#[test]
fn accepts_ordinary_programs() {
    let oracle = Oracle::new();
    for program in [
        "return 1 + 1",
        "const o = { a: { b: [1, 2] } }; return o.a.b[1] / 2;",
        "const t = `a ${ `b ${ `c ${1}` }` } d`; return t;",
        "const r = /[}]/g; const s = /\\}/; const u = /[/}]/; return [r, s, u];",
        "const f = (a, b) => { return a / b }; return f(4, 2);",
        "const g = (a) => ({ a }); return g(1).a / 1;",
        "class A { static x = {}; #p = 1; get p() { return this.#p } m() { return /}/ } } return new A().p;",
        "outer: for (const x of [1, 2]) { inner: { if (x) break inner; } continue outer; }",
        "switch (x) { case 1: { y = 1; break; } default: { y = /}/ } }",
        "let i = 0; i++ / 2; --i; return i;",
        "if (a) { b } else { c } /re/.test(d);",
        "do { x++ } while (x < 3) /re/.test('a');",
        "const o = { 'a}': 1, \"b)\": 2, [`c]`]: 3 }; return o;",
        "// })\n/* }) */ return 1;",
        "return a?.b ? .5 : 1;",
        "async function f() { for await (const x of y) {} } return f;",
        "function* g() { yield /}/; yield {} } return g;",
        "const x = function () {} / 1; return x;",
        "const y = class {} / 1; return y;",
        "return typeof {} / 2;",
        "const s = 'a\\\nb'; return s;",
        "label: { break label; }",
        "x = a\n/b/g",
        "return 1 /* } */ /\n2",
        "a = b\n++c",
        "const { a, b: { c } } = { a: 1, b: { c: 2 } }; return a / c;",
        "return new.target",
        "x = 1_000n; y = 0x1F / 2; z = .5e-3 / 1",
        "return `${'`'}${\"}\"}${/`/.source}`",
        // Found by the `jslex` fuzz target: `<<` then `!--c`, and a division on each next line.
        "x =a\n<<!-- c\n/!-- c\n/d/g",
    ] {
        check(program, "ok");
        assert_eq!(
            oracle.compile(program),
            Compiled::TheFunction,
            "program: {program:?}"
        );
    }
}

/// Lexical corners where the `/` decides whether `}); mark(); (function () {` is code: the
/// checks agree with QuickJS on each (refused exactly when QuickJS escapes).
#[test]
fn lexical_corners_agree_with_quickjs() {
    let oracle = Oracle::new();
    let out = "}); mark(); (function () { //'";
    for (lead, escapes) in [
        ("return /*\u{2028}*/ {}", true),
        ("return /*\n*/ {}", true),
        ("return {}", false),
        ("x = a\r", false),
        ("x = a\u{2028}", false),
        ("x = a\u{a0}", false),
        ("x = a\u{feff}", false),
        ("x = \\u0061", false),
        ("x = ä", false),
        ("x = 0x1e", false),
        ("x = 1e+5", false),
        ("x = 1_0n", false),
        ("x = 1..toString()", false),
        ("a: {}", true),
        ("x = { a: function () {} }.a", false),
        ("x = a\n<!-- c\n{}", true),
        // `<<` then `!--c`: no comment, so the `{}` is a block after automatic semicolon insertion.
        ("x = a\n<<!-- c\n{}", true),
        // `<<` then `<!-- c`: a comment to the end of the line, so the `{}` is an operand of `<<`.
        ("x = a\n<<<!-- c\n{}", false),
        ("x = `${ {} }`", false),
        ("x = new.target", false),
        ("x = this.#p", false),
        ("case {}", false),
        ("x = async\nfunction f() {}", true),
        ("x = async function f() {}", false),
        ("do {} while (a)", true),
        ("for (const k of a)", true),
        ("for (const k in a)", true),
        ("x = y\n++z", false),
        ("x = y++", false),
        ("x = y\n{}", true),
        ("class A extends {}.constructor {}", true),
        ("x = class extends {}.constructor {}", false),
        ("x = class extends (class {}) {}", false),
    ] {
        let program = format!("{lead} /'/{out}");
        let compiled = oracle.compile(&program);
        assert_eq!(
            matches!(compiled, Compiled::Escaped(_)),
            escapes,
            "QuickJS on {program:?}: {compiled:?}"
        );
        assert_eq!(
            check_body(&program).is_err(),
            escapes,
            "check_body on {program:?}"
        );
    }
}

/// The oracle itself: it sees an escape when there is one.
#[test]
fn the_oracle_sees_escapes() {
    let oracle = Oracle::new();
    assert!(matches!(
        oracle.compile("}); mark(); (async function () {"),
        Compiled::Escaped(_)
    ));
    assert!(matches!(
        oracle.compile("}); (async function () {"),
        Compiled::Escaped(_)
    ));
    assert_eq!(oracle.compile("return ("), Compiled::SyntaxError);
    assert_eq!(oracle.compile("mark()"), Compiled::TheFunction);
}

/// Fragments of JavaScript that make the tokenizer's decisions hard: brackets, `/` in every
/// role, quotes, templates, comments, keywords that change what `/` and `{` mean.
const FRAGMENTS: &[&str] = &[
    "a", "b", "1", ".5", "x.y", "a?.b", "?", ":", "=", "=>", ",", ";", "\n", "+", "++", "--", "!",
    "/", "/=", "/x/", "/'/", "/\"/", "/`/", "/}/", "/)/", "/[/]/", "/[}]/", "/\\//", "'", "\"",
    "`", "'}'", "\"})\"", "`}`", "`${", "}`", "${", "(", ")", "[", "]", "{", "}", "});", "/*",
    "*/", "//", "/* }) */", "<!--", "-->", "if", "else", "while", "for", "of", "in", "return",
    "typeof", "new", "await", "yield", "function", "class", "extends", "case", "default", "switch",
    "do", "let", "const", "x:", "async", "mark()", "mark();", "#p", "\u{2028}",
];

/// Fragments for the module oracle: `import` only where it is a call or `import.meta` (no
/// fragment ends with `.`, so `import` is never a property name).
const MODULE_FRAGMENTS: &[&str] = &["import('m')", "import.meta", "require('m')", "import"];

/// Ways out of the wrapper function, each recording that it ran.
const ESCAPES: &[&str] = &[
    "}); mark(); (async function () {",
    "})(); mark(); (function () {",
    "}), mark(), (function () {",
    "}) mark(); (function () {",
];

fn fragments(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..max)
        .prop_map(|parts| parts.join(" "))
}

/// Tokens after which a tokenizer must decide whether `/` divides or starts a regular expression.
const LEADS: &[&str] = &[
    "x = a",
    "x = 1",
    "x = .5",
    "x = 'a'",
    "x = `t`",
    "x = `${a}`",
    "x = /r/",
    "x = a.b",
    "x = a?.b",
    "x = a[0]",
    "x = f()",
    "x = (a)",
    "x = [a]",
    "x = {}",
    "x = {a: 1}",
    "({})",
    "x = a ? {} : {}",
    "x = a ? b : {}",
    "a++",
    "a--",
    "a\n++",
    "x = ++a",
    "x = a\n++b",
    "if (a)",
    "while (a)",
    "for (;;)",
    "for (const k in a)",
    "for (const k of a)",
    "with (a)",
    "if (a) {}",
    "if (a) {} else {}",
    "{}",
    "{ a }",
    "label: {}",
    "label:",
    "switch (a) { case 1: {} }",
    "do {} while (a)",
    "try {} catch (e) {}",
    "try {} finally {}",
    "function f() {}",
    "async function f() {}",
    "function* g() {}",
    "x = function () {}",
    "x = async function () {}",
    "x = function f() {}",
    "class A {}",
    "class A extends B {}",
    "x = class {}",
    "x = class extends B {}",
    "x = class A extends (B) {}",
    "x = () => {}\n",
    "x = () => ({})",
    "x = a => a",
    "x = async () => {}\n",
    "return",
    "return\n",
    "return {}",
    "return\n{}",
    "typeof",
    "void",
    "delete",
    "new",
    "throw",
    "x = a in",
    "x = a instanceof",
    "case",
    "await",
    "x = await",
    "x = await\n",
    "x = yield",
    "yield",
    "of",
    "let",
    "x = let",
    "x = this",
    "x = super.a",
    "x = null",
    "x = true",
    "x = a\n",
    "x = 1 /* c */",
    "x = a // c\n",
    "x = a <!-- c\n",
    "x = a\n--> c\n",
    "x = a\u{2028}",
    "x = #p in a",
    "x = `${ {} }`",
    "x = { a: {} }",
    "x = [{}]",
    "x = ({} )",
    "x = a ? .5 : 1",
    "x = a?.[0]",
    "if (a) x = {}",
    "x = { get a() {} }",
    "x = { a() {} }",
    "x = { async *a() {} }",
    "x = class { a() {} }",
    "x = class { static {} }",
    "for await (const k of a)",
    "x = a, {}",
];

/// After a lead, a `/` that hides the way out if read one way and not the other.
fn decision(escape: &str) -> Vec<String> {
    vec![
        format!("/ 1 {escape} a = b /1/ 2"),
        // The tails end the string (template, class) that the other reading is in.
        format!("/'/ {escape} //'"),
        format!("/\"/ {escape} //\""),
        format!("/`/ {escape} //`"),
        format!("/[/]/ {escape} //]"),
        format!("/ 1 /* {escape} */"),
        // Read as a regular expression, `/a/` ends where the division `/ a /` does, in
        // another state: the next `/` divides after the first and starts a regular expression
        // after the second.
        format!("/a/ /'/ {escape} //'"),
        format!("/a/ / 1 {escape} a = b /1/ 2"),
    ]
}

/// Where a lead may stand, and what closes it: `await` is an identifier in a plain function and
/// `yield` a keyword in a generator, a class body and a template substitution have their own
/// rules.
const NESTS: &[(&str, &str)] = &[
    ("", ""),
    ("function f() {", "}"),
    ("function* g() {", "}"),
    ("async function h() {", "}"),
    ("async function* i() {", "}"),
    ("x = () => {", "}"),
    ("x = function () {", "}"),
    ("class C { m() {", "}}"),
    ("class C { static {", "}}"),
    ("x = class { *m() {", "}}"),
    ("x = { a: () => {", "}}"),
    ("x = { *a() {", "}}"),
    ("x = `${ (() => {", "})() }`"),
    ("x = [function* () {", "}]"),
    ("if (a) {", "}"),
    ("label: {", "}"),
    ("switch (a) { case 1:", "}"),
    ("for (const k of a) {", "}"),
    ("f(() => {", "})"),
];

/// What a decision soup hides behind its `/`.
#[derive(Clone, Copy, Debug)]
enum Hidden {
    /// A way out of the wrapper (after closing the nest).
    Escape,
    /// Module access (the nest is closed on the next line).
    Access,
}

/// A lead, then a `/` that QuickJS reads one way or the other, hiding or showing a way out of
/// the wrapper or module access; all inside some nest.
fn decision_soup(hidden: Hidden) -> impl Strategy<Value = String> {
    let hiders: &'static [&'static str] = match hidden {
        Hidden::Escape => ESCAPES,
        Hidden::Access => MODULE_ACCESS,
    };
    (
        fragments(3),
        proptest::sample::select(NESTS),
        proptest::sample::select(LEADS),
        proptest::sample::select(hiders),
        0..8usize,
    )
        .prop_map(
            move |(before, (open, close), lead, hider, which)| match hidden {
                Hidden::Escape => {
                    let tail = decision(&format!("{close} {hider}")).swap_remove(which);
                    format!("{before}\n{open}\n{lead} {tail}")
                }
                Hidden::Access => {
                    let tail = decision(hider).swap_remove(which);
                    format!("{before}\n{open}\n{lead} {tail}\n{close}")
                }
            },
        )
}

/// A token soup, or one with a way out of the wrapper in its middle (which QuickJS takes
/// unless the soup before it makes the way out part of a string, comment, regular expression
/// or template, or the whole does not parse).
fn body_soup() -> impl Strategy<Value = String> {
    prop_oneof![
        decision_soup(Hidden::Escape),
        fragments(14),
        (
            fragments(7),
            proptest::sample::select(ESCAPES),
            fragments(7)
        )
            .prop_map(|(before, escape, after)| format!("{before} {escape} {after}")),
    ]
}

/// A token soup with module access in its middle, `import` never being a property name (no
/// fragment ends with `.`).
fn module_soup() -> impl Strategy<Value = String> {
    prop_oneof![decision_soup(Hidden::Access), module_fragments()]
}

/// Module access the way the decision soups hide it: each a whole statement or expression.
const MODULE_ACCESS: &[&str] = &[
    "; import('m');",
    ", import('m'),",
    "; require('m');",
    "+ import.meta +",
];

fn module_fragments() -> impl Strategy<Value = String> {
    (
        fragments(8),
        proptest::sample::select(MODULE_FRAGMENTS),
        fragments(8),
    )
        .prop_map(|(before, access, after)| format!("{before} {access} {after}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20000, ..ProptestConfig::default() })]

    /// If `check_body` accepts a program, QuickJS either rejects the wrapped text or compiles
    /// exactly the wrapper function, and no code ran while compiling it.
    #[test]
    fn accepted_bodies_never_escape(program in body_soup()) {
        let oracle = ORACLE.with(|oracle| oracle.compile(&program));
        if check_body(&program).is_ok() {
            prop_assert!(
                !matches!(oracle, Compiled::Escaped(_)),
                "accepted {:?} but QuickJS: {:?}", program, oracle
            );
        }
    }

    /// If `check_program` accepts a program that QuickJS compiles, no `import`/`require` in it
    /// is a token to QuickJS: replacing any occurrence with `@` characters (which QuickJS
    /// rejects outside strings, comments, regular expressions and template text) still compiles.
    #[test]
    fn accepted_programs_never_reach_modules(program in module_soup()) {
        if check_program(&program).is_ok() {
            ORACLE.with(|oracle| {
                let compiled = oracle.compile(&program);
                prop_assert!(!matches!(compiled, Compiled::Escaped(_)), "{:?}: {:?}", program, compiled);
                if compiled == Compiled::TheFunction {
                    for word in ["import", "require"] {
                        for (at, _) in program.match_indices(word) {
                            let mut masked = program.clone();
                            masked.replace_range(at..at + word.len(), &"@".repeat(word.len()));
                            prop_assert_eq!(
                                oracle.compile(&masked),
                                Compiled::TheFunction,
                                "{:?} is accepted but QuickJS reads the `{}` at {} as a token",
                                program, word, at
                            );
                        }
                    }
                }
                Ok(())
            })?;
        }
    }
}

thread_local! {
    static ORACLE: Oracle = Oracle::new();
}

/// The body soups are not vacuous: QuickJS compiles many of them, and many of those escape the
/// wrapper (so `accepted_bodies_never_escape` has real escapes to refuse).
#[test]
fn the_body_soups_reach_quickjs() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let oracle = Oracle::new();
    let (mut compiled, mut escaped) = (0, 0);
    for _ in 0..2000 {
        let program = body_soup()
            .new_tree(&mut runner)
            .expect("program")
            .current();
        match oracle.compile(&program) {
            Compiled::TheFunction => compiled += 1,
            Compiled::Escaped(_) => {
                escaped += 1;
                assert!(check_body(&program).is_err(), "accepted {program:?}");
            }
            Compiled::SyntaxError => {}
        }
    }
    assert!(compiled > 100, "only {compiled} of 2000 compiled");
    assert!(escaped > 50, "only {escaped} of 2000 escaped");
}
