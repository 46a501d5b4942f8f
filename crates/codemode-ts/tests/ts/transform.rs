//! Data-driven tests of the public transform API.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use codemode_ts::{
    TransformOptions, TsError, transform, transform_async, transform_count, transform_thread_count,
    transform_threads_started, transform_with,
};
use proptest::prelude::*;

/// Transform `source` and compare the result (output or error text) with
/// `expect`, whitespace-normalised so the printer's indentation does not matter.
#[track_caller]
fn check(source: &str, expect: &str) {
    let actual = match transform(source) {
        Ok(js) => js,
        Err(error) => error.to_string(),
    };
    assert_eq!(
        normalise(&actual),
        normalise(expect),
        "full output:\n{actual}"
    );
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn types_are_erased() {
    check(
        "type Id = string;\ninterface Item { id: Id }\ndeclare const host: unknown;\nconst item: Item = { id: 'a' };\nreturn item.id as Id;",
        "const item = { id: 'a' }; return item.id;",
    );
}

#[test]
fn generics_are_erased() {
    check(
        "function first<T extends object>(xs: readonly T[]): T | undefined { return xs[0]; }\nreturn first<{ a: number }>([{ a: 1 }]);",
        "function first(xs) { return xs[0]; } return first([ { a: 1 } ]);",
    );
}

#[test]
fn as_const_satisfies_is_erased() {
    check(
        "const limits = { max: 3 } as const satisfies Record<string, number>;\nreturn limits.max;",
        "const limits = { max: 3 }; return limits.max;",
    );
}

#[test]
fn non_null_assertions_are_erased() {
    check(
        "const m = new Map<string, number>();\nreturn m.get('a')!.toFixed(1)!;",
        "const m = new Map(); return m.get('a').toFixed(1);",
    );
}

#[test]
fn const_enums_are_inlined() {
    check("const enum E { A = 1, B }\nreturn E.B;", "return 2;");
}

#[test]
fn namespaces_inside_functions_are_transformed() {
    check(
        "function f() { namespace N { export const a = 1; } return N.a; }\nreturn f();",
        "function f() { (function(N) { N.a = 1; })(N || (N = {})); return N.a; var N; } return f();",
    );
    // The legacy `module` keyword for namespaces is transformed the same way.
    check(
        "module Foo { export const a = 1 }\nreturn Foo.a;",
        "(function(Foo) { Foo.a = 1; })(Foo || (Foo = {})); return Foo.a; var Foo;",
    );
}

#[test]
fn type_only_constructs_are_erased() {
    check(
        "declare module 'x' { const a: number; }\ndeclare global { interface W { a: 1 } }\n\
         function over(a: string): string;\nfunction over(a: any) { return <string>a; }\n\
         abstract class A { abstract f(): void; private g = 1; }\nreturn (x: unknown): x is A => true;",
        "function over(a) { return a; } class A { g = 1; } return (x)=>true;",
    );
}

#[test]
fn exports_are_a_clear_error() {
    check(
        "export const x = 1;",
        "typescript transform failed: 'import', and 'export' cannot be used outside of module code at 1:1",
    );
}

#[test]
fn top_level_await_and_return_work() {
    check(
        "const r = await tools.call('openclaw:core:read', { path: 'a' });\nif (!r) return null;\nreturn r;",
        "const r = await tools.call('openclaw:core:read', { path: 'a' }); if (!r) return null; return r;",
    );
}

#[test]
fn type_imports_are_erased() {
    check(
        "import type { Tool } from './tools';\nimport { type Other } from 'x';\nconst t: Tool | Other = await tools.describe('a');\nreturn t;",
        "const t = await tools.describe('a'); return t;",
    );
}

#[test]
fn value_imports_are_a_clear_error() {
    check(
        "const a = 1;\nimport { readFile } from 'fs';",
        "typescript transform failed: 'import', and 'export' cannot be used outside of module code at 2:1",
    );
}

#[test]
fn decorators_are_a_clear_error() {
    check(
        "function sealed(target: unknown) {}\n  @sealed class A {}",
        "typescript transform failed: decorators are not supported in code-mode cells at 2:3",
    );
}

#[test]
fn syntax_errors_report_the_users_line_and_column() {
    check(
        "let a = 1;\nlet b = ;",
        "typescript transform failed: Expression expected at 2:9",
    );
    check(
        "const x = 1;\n\nfunction f(a: number {\n  return a;\n}",
        "typescript transform failed: Expected ',', got '{' at 3:22",
    );
    // Multi-byte characters count as one column each.
    check(
        "const é = 'ü'; const = 2;",
        "typescript transform failed: Unexpected token `=`. Expected yield, an identifier, [ or { at 1:22",
    );
}

#[test]
fn errors_at_the_end_of_the_cell_point_at_its_end() {
    check(
        "const a = [1, 2,\n",
        "typescript transform failed: Expression expected at 2:1",
    );
    check(
        "return `open",
        "typescript transform failed: Unterminated template at 1:8",
    );
}

#[test]
fn the_wrapper_cannot_be_escaped() {
    check(
        "} }\nasync function evil() { {\nreturn 1;",
        "typescript transform failed: unbalanced `}`: the cell closes more braces than it opens at 3:10",
    );
    check(
        "} }\nevil();\n{ {",
        "typescript transform failed: unbalanced `}`: the cell closes more braces than it opens at 3:4",
    );
    // Spelling the wrapper's label with an escape is caught on the way out.
    assert!(matches!(
        transform("x = \\u005f_codemode_body_0;"),
        Err(TsError::Internal { .. })
    ));
}

#[test]
fn the_wrapper_names_avoid_user_names() {
    check(
        "const __codemode_body_0 = 1;\nconst __codemode_cell_1 = 2;\nreturn __codemode_body_0 + __codemode_cell_1;",
        "const __codemode_body_0 = 1; const __codemode_cell_1 = 2; return __codemode_body_0 + __codemode_cell_1;",
    );
}

#[test]
fn empty_and_comment_only_cells_give_empty_bodies() {
    check("", "");
    check("// nothing to do\n", "");
    check("type OnlyTypes = number;", "");
}

#[test]
fn size_guard_rejects_before_parsing() {
    let options = TransformOptions {
        max_source_bytes: 10,
        ..TransformOptions::default()
    };
    assert_eq!(
        transform_with("return 12345678;", &options)
            .unwrap_err()
            .to_string(),
        "typescript transform failed: source is 16 bytes, more than the limit of 10 bytes"
    );
    let huge = "x".repeat(codemode_ts::DEFAULT_MAX_SOURCE_BYTES + 1);
    assert!(matches!(
        transform(&huge),
        Err(TsError::SourceTooLarge { .. })
    ));
}

#[test]
fn nesting_guard_rejects_pathological_input() {
    let parens = "(".repeat(100_000);
    assert_eq!(
        transform(&parens).unwrap_err().to_string(),
        "typescript transform failed: nesting deeper than 512 levels at 1:257"
    );
    for hostile in [
        format!("return {}x;", "!".repeat(100_000)),
        format!("return 1{};", "+1".repeat(100_000)),
        format!("return a{};", ".b".repeat(100_000)),
        format!("{}x;", "if (a) ".repeat(100_000)),
        format!("let v: {}number;", "Array<".repeat(100_000)),
        format!("return {}1{};", "[".repeat(100_000), "]".repeat(100_000)),
        format!("return {}1{};", "`${".repeat(10_000), "}`".repeat(10_000)),
        format!("if (a) /\"/.test(s) + {}", "(".repeat(100_000)),
        format!("function f() {{}}\n/`/.test(s); {}", "(".repeat(100_000)),
    ] {
        assert!(
            matches!(
                transform(&hostile),
                Err(TsError::NestingTooDeep { limit: 512, .. })
            ),
            "{hostile:.30}"
        );
    }
}

#[test]
fn nesting_just_below_the_limit_transforms() {
    let nested = format!("return {}1{};", "(".repeat(200), ")".repeat(200));
    assert_eq!(normalise(&transform(&nested).unwrap()), "return 1;");
    let chain = format!("return 1{};", " + 1".repeat(400));
    assert!(transform(&chain).is_ok());
}

#[test]
fn the_callers_small_stack_is_never_used_for_parsing() {
    let nested = format!("return {}1{};", "(".repeat(200), ")".repeat(200));
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || transform(&nested))
        .expect("spawn a small-stack thread");
    let output = worker
        .join()
        .expect("no stack overflow on the caller's thread");
    assert_eq!(normalise(&output.unwrap()), "return 1;");
}

#[test]
fn transform_count_increments_on_every_call() {
    let before = transform_count();
    let _ = transform("return 1;");
    let _ = transform("let = ;");
    // Other tests run in parallel: at least our two calls were counted.
    assert!(transform_count() >= before + 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_strings_never_panic(source in "\\PC{0,200}") {
        match transform(&source) {
            Ok(_) => {}
            Err(error) => {
                prop_assert!(error.to_string().starts_with("typescript transform failed: "));
                prop_assert!(!matches!(error, TsError::Internal { .. }), "{}", error);
            }
        }
    }

    #[test]
    fn arbitrary_token_soup_never_panics(
        tokens in proptest::collection::vec(
            prop::sample::select(vec![
                "(", ")", "{", "}", "[", "]", "`", "${", "'", "\"", "/", "/*", "*/", "//",
                "\n", ";", ",", "=>", "!", "<", ">", "as", "enum", "namespace", "return",
                "await", "x", "1", "@", "import type", "type", ":", "?", ".",
            ]),
            0..60,
        )
    ) {
        let source = tokens.join(" ");
        if let Err(error) = transform(&source) {
            prop_assert!(error.to_string().starts_with("typescript transform failed: "));
            // swc itself panics on rare soups (see
            // `a_panic_inside_swc_is_an_error_and_the_pool_lives_on`): that
            // is caught and reported. Any other internal error is a bug here.
            let swc_panicked = error.to_string().contains("the transformer panicked");
            prop_assert!(
                swc_panicked || !matches!(error, TsError::Internal { .. }),
                "{}: {:?}", error, source
            );
        }
    }

    #[test]
    fn reported_positions_are_inside_the_users_text(prefix in "[a-z =;\n]{0,40}") {
        let source = format!("{prefix}\nconst = 1;");
        if let Err(TsError::Syntax { line, column, .. }) = transform(&source) {
            let lines: Vec<&str> = source.split('\n').collect();
            prop_assert!(line >= 1 && line <= lines.len());
            let width = lines.get(line - 1).map_or(0, |text| text.chars().count());
            prop_assert!(column >= 1 && column <= width + 1);
        }
    }
}

/// The two cells that aborted the host before the nesting bound read an
/// ambiguous `/` both ways: a clean error now, on every entry point.
#[test]
fn division_chains_that_look_like_regular_expressions_are_refused() {
    let cells = [
        format!("let of = 2;\nreturn of / {}1 / 1;", "-+".repeat(100_000)),
        format!("return {{ a: {{}} / {}1 / 1 }};", "-+".repeat(150_000)),
    ];
    for cell in &cells {
        assert!(
            matches!(
                transform(cell),
                Err(TsError::NestingTooDeep { limit: 512, .. })
            ),
            "{cell:.40}"
        );
        let asynchronous = block_on_all(vec![transform_async(
            cell.clone(),
            TransformOptions::default(),
        )]);
        assert!(
            matches!(
                asynchronous.as_slice(),
                [Err(TsError::NestingTooDeep { .. })]
            ),
            "{cell:.40}"
        );
    }
}

#[test]
fn ordinary_cells_with_slashes_and_generics_transform() {
    let cells = [
        include_str!("cell.ts"),
        "const total = 10, count = 4;\nconst mean = total / count; // per item / rounded\nreturn Math.round(mean * 100) / 100;",
        "const re = /a\\/b[/]c/gi;\nconst parts = 'x/y/z'.split('/');\nreturn re.test(parts.join('/')) ? 1 / 2 : (3 + 4) / 5;",
        "let of = 2;\nconst ratio = of / 2 / 1;\nfor (const x of [of / 2]) { of = x / 2; }\nreturn of;",
        "const m = new Map<string, Array<Record<string, number[]>>>();\nconst xs: Array<Array<number>> = [[1], [2]];\nreturn xs.length < 3 && m.size > 0;",
        "const rows = [1, 2, 3].map((n) => ({ n, half: n / 2, label: `row ${n}: ${n / 2}` }));\nreturn rows.filter((r) => r.half > 0.5).length;",
        "function f(a: number) {\n  if (a > 1) return a / 2\n  else if (a < 0) return -a\n  return a\n}\nreturn f(3) / f(-1)",
    ];
    for cell in cells {
        assert!(transform(cell).is_ok(), "{cell}\n{:?}", transform(cell));
    }
}

#[test]
fn concurrent_transforms_share_a_bounded_pool() {
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            std::thread::spawn(move || {
                (0..8)
                    .map(|index| {
                        let value = worker * 8 + index;
                        (value, transform(&format!("return {value} as number;")))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let asynchronous = block_on_all(
        (100..164)
            .map(|value| {
                transform_async(
                    format!("return {value} as number;"),
                    TransformOptions::default(),
                )
            })
            .collect(),
    );
    let mut results = Vec::new();
    for worker in workers {
        results.extend(worker.join().expect("transform caller thread"));
    }
    results.extend((100..164).zip(asynchronous));
    assert_eq!(results.len(), 128);
    for (value, output) in results {
        assert_eq!(
            output.map(|js| normalise(&js)),
            Ok(format!("return {value};"))
        );
    }
    // Other tests of this binary transform in parallel: still never more
    // threads than the pool has.
    assert!(transform_threads_started() >= 1);
    assert!(transform_threads_started() <= transform_thread_count());
    #[cfg(target_os = "linux")]
    assert!(pool_threads_alive() <= transform_thread_count());
}

/// swc 47 trips over one of its own assertions on this input (found by
/// `arbitrary_token_soup_never_panics` with more cases; debug builds). The
/// pool catches the panic as an error and its threads keep working.
#[test]
fn a_panic_inside_swc_is_an_error_and_the_pool_lives_on() {
    let tripping = "enum ${ ${ / as ; / import type";
    for _ in 0..2 * transform_thread_count() {
        let result = transform(tripping);
        assert!(
            matches!(
                result,
                Err(TsError::Internal { .. } | TsError::Syntax { .. })
            ),
            "{result:?}"
        );
        assert_eq!(
            transform("return 1 as number;").map(|js| normalise(&js)),
            Ok("return 1;".to_owned())
        );
    }
    assert!(transform_threads_started() <= transform_thread_count());
}

#[test]
fn a_larger_stack_than_the_pool_has_gets_a_thread_of_its_own() {
    let options = TransformOptions {
        stack_size: 2 * codemode_ts::DEFAULT_STACK_SIZE,
        ..TransformOptions::default()
    };
    assert_eq!(
        transform_with("return 1 as number;", &options).map(|js| normalise(&js)),
        Ok("return 1;".to_owned())
    );
    let asynchronous = block_on_all(vec![transform_async(
        "return 2 as number;".to_owned(),
        options,
    )]);
    assert!(
        matches!(asynchronous.as_slice(), [Ok(js)] if js.trim() == "return 2;"),
        "{asynchronous:?}"
    );
}

#[test]
fn declaration_checks_are_bounded_too() {
    let hostile = format!("declare const x: {}number;", "keyof\u{a0}".repeat(100_000));
    assert!(matches!(
        codemode_ts::check_declaration_file(&hostile),
        Err(TsError::NestingTooDeep { .. })
    ));
}

#[test]
fn the_async_transform_can_move_between_worker_threads() {
    fn assert_send<T: Send>(value: T) -> T {
        value
    }
    let future = assert_send(transform_async(
        "return 1 as number;".to_owned(),
        TransformOptions::default(),
    ));
    let output = std::thread::spawn(move || block_on_all(vec![future]))
        .join()
        .expect("polling thread");
    assert!(
        matches!(output.as_slice(), [Ok(js)] if js.trim() == "return 1;"),
        "{output:?}"
    );
}

/// Threads of this process named `codemode-ts-*`.
#[cfg(target_os = "linux")]
fn pool_threads_alive() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
                .filter(|name| name.starts_with("codemode-ts-"))
                .count()
        })
        .unwrap_or(0)
}

/// Wakes the thread that polls.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Drive all `futures` to completion on this one thread, the way a
/// single-threaded async runtime would: a future that blocked its thread
/// would hold up all the others.
fn block_on_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    loop {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(&mut context) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if !pending {
            return outputs.into_iter().flatten().collect();
        }
        // A wake-up between the poll and here makes `park` return at once.
        std::thread::park();
    }
}

/// One way of nesting an expression inside another: `open`, the inner
/// expression, `close`.
#[derive(Debug, Clone, Copy)]
struct Layer {
    open: &'static str,
    close: &'static str,
}

const fn layer(open: &'static str, close: &'static str) -> Layer {
    Layer { open, close }
}

/// Expression nestings, including every lexing ambiguity the bound must
/// read both ways.
const EXPRESSION_LAYERS: &[Layer] = &[
    layer("-", ""),
    layer("+", ""),
    layer("-+", ""),
    layer("!~", ""),
    layer("typeof ", ""),
    layer("await ", ""),
    layer("void ", ""),
    layer("new ", ""),
    layer("(", ")"),
    layer("[", "]"),
    layer("{ a: ", " }"),
    layer("(function () { return ", " })"),
    layer("(() => { if (a) { return ", " } })"),
    layer("`${", "}`"),
    layer("t`${", "}`"),
    layer("a ? ", " : b"),
    layer("a ? b : ", ""),
    layer("() => ", ""),
    layer("(a) => ", ""),
    layer("a / ", ""),
    layer("of / ", ""),
    layer("{} / ", ""),
    layer("(a) / ", ""),
    layer("a++ / ", ""),
    layer("a! / ", ""),
    layer("/`/.test(", ")"),
    layer("/'/.test(s) + ", ""),
    layer("/[/]/.exec(", ")"),
    layer("f<Array<T>>(", ")"),
    layer("a < b || ", ""),
    layer("x as unknown as ", ""),
    layer("", ".a"),
    layer("", "()"),
    layer("", " / 1"),
    layer("1 + ", ""),
];

/// Statement nestings, and Unicode spellings the lexer must read as swc does.
const STATEMENT_LAYERS: &[Layer] = &[
    layer("if (a) ", ""),
    layer("if (a) x; else ", ""),
    layer("if (a) {} else ", ""),
    layer("l: ", ""),
    layer("do ", " while (a)"),
    layer("{ ", " }"),
    layer("for (const x of y) ", ""),
    layer("for await (const x of y) ", ""),
    layer("while (a) ", ""),
    layer("with (o) ", ""),
    layer("try { ", " } finally {}"),
    layer("switch (a) { case 1: ", " }"),
    layer("(() => { ", " })();"),
    layer("x, ", ""),
    layer("x;\n", ""),
    layer("typeof\u{a0}", ""),
    layer("await\u{3000}", ""),
    layer("1./ ", ""),
    layer("a\u{2028}/`/.test(", ")"),
];

/// Type nestings.
const TYPE_LAYERS: &[Layer] = &[
    layer("Array<", ">"),
    layer("Map<string, ", ">"),
    layer("{ a: ", " }"),
    layer("[", "]"),
    layer("() => ", ""),
    layer("keyof ", ""),
    layer("A | ", ""),
    layer("T extends U ? ", " : never"),
    layer("(", ")"),
    layer("", "[]"),
];

/// A stack of layers, each repeated: `repeat` times its open, the core, then
/// the closes in reverse.
fn nested(prefix: &str, layers: &[(Layer, usize)], core: &str, suffix: &str) -> String {
    let mut text = String::from(prefix);
    for (layer, repeat) in layers {
        text.push_str(&layer.open.repeat(*repeat));
    }
    text.push_str(core);
    for (layer, repeat) in layers.iter().rev() {
        text.push_str(&layer.close.repeat(*repeat));
    }
    text.push_str(suffix);
    text
}

/// Depths from a few to tens of thousands, most of them around the limit.
fn repeat_count() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..8, 8usize..600, 600usize..30_000]
}

fn layer_stack(layers: &'static [Layer]) -> impl Strategy<Value = Vec<(Layer, usize)>> {
    proptest::collection::vec((prop::sample::select(layers), repeat_count()), 1..5)
}

/// An ordinary statement; `{i}` is replaced by its index.
const ORDINARY_STATEMENTS: &[&str] = &[
    "const a{i} = await tools.call('x:y', { q: [1, 2, 3], s: `v${1}` });",
    "const b{i}: Array<Record<string, number>> = [{ a: 1 }];",
    "let c{i} = (total / count) * 100 / 2; // 50/50",
    "if (x / 2 > y) { z = /a\\/b[/]/g.test(s) ? 1 : 2; } else { z = 3; }",
    "for (const v of list) { sum += v / list.length; }",
    "const d{i} = items.filter((i) => i.ok).map((i) => i.name).join(', ')",
    "result.push(`${name}: ${value / 1000}s`)",
    "function f{i}<T extends object>(xs: readonly T[]): T | undefined { return xs[0]; }",
    "type T{i} = { [K in keyof U]?: U[K] extends string ? K : never };",
    "const e{i} = a < b && c > d ? a : b;",
    "const g{i} = map.get(key)! / total; // see `docs` / notes",
    "const h{i} = /[\"'`(]/g.test(text) && `${done / total}%`.length > 2",
    "if (!ok) {\n  throw new Error(`bad: ${(a / b).toFixed(2)}`)\n}",
    "const k{i} = items\n  .filter((i) => i.size / 2 > 1)\n  .map((i) => ({ ...i, ratio: i.a / i.b }))",
    "label{i}: for (const x of [1, 2]) { if (x / 2 > 0) continue label{i}; }",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the nesting, the transform answers: on the production pool
    /// threads, a stack overflow would abort this test binary.
    #[test]
    fn nested_expressions_never_overflow(layers in layer_stack(EXPRESSION_LAYERS)) {
        let cell = nested("let of = 2, a = 1, b = 2, s = '', t = String.raw, f = (x: unknown) => x;\nreturn ", &layers, "1", ";");
        if let Err(error) = transform(&cell) {
            prop_assert!(error.to_string().starts_with("typescript transform failed: "));
        }
    }

    #[test]
    fn nested_statements_never_overflow(layers in layer_stack(STATEMENT_LAYERS)) {
        let cell = nested("let a = 1, x = 2, y = [1], o = {};\n", &layers, "-+1;", "\nreturn x;");
        if let Err(error) = transform(&cell) {
            prop_assert!(error.to_string().starts_with("typescript transform failed: "));
        }
    }

    #[test]
    fn nested_types_never_overflow(layers in layer_stack(TYPE_LAYERS)) {
        let cell = nested("let v: ", &layers, "number", " = 1;\nreturn v;");
        if let Err(error) = transform(&cell) {
            prop_assert!(error.to_string().starts_with("typescript transform failed: "));
        }
    }

    /// Ordinary statements, in any order and number, are never refused.
    #[test]
    fn ordinary_cells_are_not_refused(
        statements in proptest::collection::vec(prop::sample::select(ORDINARY_STATEMENTS), 0..300)
    ) {
        let cell: String = statements
            .iter()
            .enumerate()
            .map(|(index, statement)| statement.replace("{i}", &index.to_string()) + "\n")
            .collect();
        let result = transform(&cell);
        prop_assert!(result.is_ok(), "{:?}", result);
    }
}
