//! One run of arbitrary guest source against arbitrary tool answers: it must end with a step
//! (completed, suspended or failed), within its deadline plus the grace, without a panic.
#![no_main]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use codemode_sandbox::{
    BridgeHost, BridgeRequest, Callable, DEADLINE_GRACE, GuestSetup, LegEnd, Limits, Placement, Run,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

mod json;

// Tool answers nest as deep as the fuzzer likes: the bridge must refuse what is too deep.
use json::Json;

/// A tool answer: a JSON value, an error, or never.
#[derive(Arbitrary, Debug)]
enum Answer {
    Value(Json),
    Error(String),
    Never,
}

#[derive(Arbitrary, Debug)]
struct Case {
    /// Code from a small vocabulary of fragments that reach the bridge, then raw text.
    fragments: Vec<u8>,
    source: String,
    answers: Vec<Answer>,
    yields: bool,
}

const FRAGMENTS: &[&str] = &[
    "await tool(1);",
    "tool({a: [1, 2]}).catch(e => text(e.message));",
    "json(await tool('x'));",
    "text(String(await tool()));",
    "await Promise.all([tool(1), tool(2), tool(3)]);",
    "await yield_control();",
    "for (let i = 0; i < 100; i++) tool(i);",
    "return await tool(0);",
    "try { await tool(null) } catch (e) { json(e) }",
    "const o = {}; o.o = o; json(o);",
    "return {f() {}, n: 1n, s: Symbol('s')};",
    "throw new Error('x\\ud800');",
    "throw null;",
    "while (true) {}",
    "'a'.repeat(1e6).indexOf('a'.repeat(5e4) + 'b');",
    "return 1;",
    "}); (async function() {",
    "/*",
    "`${",
    "import('x');",
    "new Function('return 1')();",
];

/// The host answers each call with the next answer, or never once they run out.
struct Host(Mutex<VecDeque<Answer>>);

#[async_trait::async_trait]
impl BridgeHost for Host {
    async fn call(&self, _request: BridgeRequest) -> Result<Value, String> {
        let answer = self
            .0
            .lock()
            .map(|mut answers| answers.pop_front())
            .unwrap_or(None);
        match answer {
            Some(Answer::Value(json)) => Ok(json.into_value()),
            Some(Answer::Error(message)) => Err(message),
            Some(Answer::Never) | None => std::future::pending().await,
        }
    }
}

fuzz_target!(|case: Case| {
    let mut program: String = case
        .fragments
        .iter()
        .map(|index| FRAGMENTS[usize::from(*index) % FRAGMENTS.len()])
        .collect::<Vec<_>>()
        .join("\n");
    program.push('\n');
    program.push_str(&case.source);
    let mut setup = GuestSetup::default();
    setup.callables.push((
        vec!["tool".into()],
        Callable::Bridge {
            method: "tool".into(),
            bound_args: vec![],
        },
    ));
    let timeout = Duration::from_millis(100);
    let limits = Limits::default().with_memory_bytes(16 << 20);
    let host = Arc::new(Host(Mutex::new(case.answers.into())));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let Ok(mut run) = Run::start(&program, setup, &limits, &Placement::Thread, host) else {
            return;
        };
        for _ in 0..if case.yields { 3 } else { 1 } {
            let started = Instant::now();
            let step = run.drive(started + timeout).await;
            // The result is never later than the deadline plus the grace (and some slack for a
            // loaded machine: this bounds lateness, it does not time the run).
            assert!(started.elapsed() < timeout + DEADLINE_GRACE + Duration::from_secs(2));
            if !matches!(step, LegEnd::Suspended { .. }) {
                break;
            }
        }
    });
});
