//! Property test: arbitrary short programs fed arbitrary JSON settlements never make the host
//! panic, and every leg ends in a well-formed step within the limits.

use std::time::{Duration, Instant};

use crate::support::{TestHost, limits, setup};
use codemode_sandbox::{LegEnd, OutputItem};
use proptest::prelude::*;
use serde_json::Value;

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("__proto__".to_owned()),
        Just("constructor".to_owned()),
        Just("then".to_owned()),
        Just("toJSON".to_owned()),
        "[a-z]{1,6}",
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

const FRAGMENTS: &[&str] = &[
    "text(await host.value(0));",
    "json(await host.value(1));",
    "const r = await host.value(2); text(typeof r);",
    "try { await host.fail('x') } catch (e) { text(e.message) }",
    "await yield_control();",
    "json((await host.value(3))?.__proto__ ?? null);",
    "return await host.value(0);",
    "throw await host.value(1);",
    "text(JSON.stringify(await host.value(2)));",
    "host.never();",
    "await Promise.all([host.value(0), host.value(1)]);",
    "for (const k in (await host.value(0)) ?? {}) text(k);",
    "Object.prototype.then = function (resolve) { resolve(1) };",
    "await tools.call(await host.value(1), await host.value(2));",
    "json(await tools.search(await host.value(3)));",
    "{ const v = await host.value(0); if (v && typeof v === 'object') v.self = v; json(v); }",
];

fn arb_program() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(prop::sample::select(FRAGMENTS), 1..6).prop_map(|parts| parts.concat()),
        1 => "\\PC{0,60}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_host_never_panics(program in arb_program(), values in prop::collection::vec(arb_json(), 0..4)) {
        let (host, _cancelled) = TestHost::with_values(values);
        let limits = limits().with_timeout(Duration::from_millis(200)).with_max_output_bytes(4096);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let Ok(mut run) = limits.start(&program, setup(), host) else { return Ok(()) };
            let mut emitted = 0usize;
            for _leg in 0..3 {
                let step = run.drive(Instant::now() + limits.timeout).await;
                let output = match &step {
                    LegEnd::Completed { output, .. } | LegEnd::Suspended { output, .. } | LegEnd::Failed { output, .. } => output,
                };
                emitted += output.iter().map(|item| serde_json::to_string(&match item {
                    OutputItem::Text { text } => Value::String(text.clone()),
                    OutputItem::Json { value } => value.clone(),
                }).unwrap().len()).sum::<usize>();
                prop_assert!(emitted <= limits.sandbox.max_output_bytes, "emitted {emitted} bytes");
                match step {
                    LegEnd::Suspended { .. } => prop_assert!(run.is_alive()),
                    _ => {
                        prop_assert!(!run.is_alive());
                        break;
                    }
                }
            }
            Ok(())
        })?;
    }
}
