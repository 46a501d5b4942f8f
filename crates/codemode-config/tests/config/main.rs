//! Integration tests of codemode-config: the `tools.codeMode` contract (SPEC §3).

use codemode_config::{CodeModeConfig, ConfigError, Language};
use serde_json::{Value, json};

fn check(input: Value, expect: Result<&str, &str>) {
    match (CodeModeConfig::from_json(&input), expect) {
        (Ok(config), Ok(expected)) => {
            let shown = serde_json::to_value(&config).unwrap();
            let wanted: Value = serde_json::from_str(expected).unwrap();
            for (key, value) in wanted.as_object().unwrap() {
                assert_eq!(&shown[key], value, "{key} of {input}");
            }
        }
        (Err(error), Err(message)) => assert_eq!(error.to_string(), message, "{input}"),
        (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn shapes_and_activation() {
    check(json!(true), Ok(r#"{"enabled": true, "timeoutMs": 10000}"#));
    check(json!(false), Ok(r#"{"enabled": false}"#));
    check(Value::Null, Ok(r#"{"enabled": false}"#));
    check(json!({}), Ok(r#"{"enabled": false}"#));
    // Setting other fields never enables code mode.
    check(
        json!({ "timeoutMs": 500, "maxOutputBytes": 2048 }),
        Ok(r#"{"enabled": false, "timeoutMs": 500}"#),
    );
    check(
        json!({ "enabled": true }),
        Ok(r#"{"enabled": true, "memoryLimitBytes": 67108864}"#),
    );
    check(
        json!("yes"),
        Err("tools.codeMode must be true, false or an object."),
    );
    check(
        json!(1),
        Err("tools.codeMode must be true, false or an object."),
    );
    check(
        json!({ "enabled": "true" }),
        Err("tools.codeMode.enabled must be a boolean."),
    );
}

#[test]
fn clamps_into_ranges() {
    check(
        json!({ "enabled": true, "timeoutMs": 1, "memoryLimitBytes": 1, "maxOutputBytes": 1, "maxSnapshotBytes": 1,
                "maxPendingToolCalls": 1000, "snapshotTtlSeconds": 999999, "maxSearchLimit": 500, "searchDefaultLimit": 80 }),
        Ok(
            r#"{"timeoutMs": 100, "memoryLimitBytes": 1048576, "maxOutputBytes": 1024, "maxSnapshotBytes": 1024,
               "maxPendingToolCalls": 128, "snapshotTtlSeconds": 86400, "maxSearchLimit": 50, "searchDefaultLimit": 50}"#,
        ),
    );
    check(
        json!({ "enabled": true, "timeoutMs": 999999, "maxSearchLimit": 5, "searchDefaultLimit": 8 }),
        Ok(r#"{"timeoutMs": 60000, "maxSearchLimit": 5, "searchDefaultLimit": 5}"#),
    );
}

#[test]
fn bad_values_are_errors_naming_the_field() {
    for bad in [
        json!(0),
        json!(-5),
        json!(1.5),
        json!("100"),
        json!(null),
        json!([1]),
    ] {
        check(
            json!({ "enabled": true, "timeoutMs": bad }),
            Err("tools.codeMode.timeoutMs must be a positive integer."),
        );
    }
    check(
        json!({ "enabled": true, "maxPendingToolCalls": 0 }),
        Err("tools.codeMode.maxPendingToolCalls must be a positive integer."),
    );
    check(
        json!({ "enabled": true, "timeout": 5 }),
        Err("tools.codeMode has an unknown key `timeout`."),
    );
    let languages =
        "tools.codeMode.languages must be a non-empty array of \"javascript\" and \"typescript\".";
    check(json!({ "languages": [] }), Err(languages));
    check(json!({ "languages": ["python"] }), Err(languages));
    check(json!({ "languages": "javascript" }), Err(languages));
    let isolation = "tools.codeMode.isolation must be \"thread\" or \"process\".";
    check(json!({ "isolation": "vm" }), Err(isolation));
    check(json!({ "isolation": true }), Err(isolation));
    check(json!({ "isolation": null }), Err(isolation));
}

#[test]
fn isolation_is_thread_unless_process_is_asked_for() {
    use codemode_config::IsolationMode;
    let parse = |value: Value| CodeModeConfig::from_json(&value).unwrap().isolation();
    assert_eq!(parse(json!(true)), IsolationMode::Thread);
    assert_eq!(
        parse(json!({ "isolation": "thread" })),
        IsolationMode::Thread
    );
    assert_eq!(
        parse(json!({ "isolation": "process" })),
        IsolationMode::Process
    );
}

#[test]
fn languages_subset() {
    let config =
        CodeModeConfig::from_json(&json!({ "enabled": true, "languages": ["javascript"] }))
            .unwrap();
    assert!(config.allows(Language::Javascript));
    assert!(!config.allows(Language::Typescript));
    assert!(
        matches!(CodeModeConfig::from_json(&json!({ "bogus": 1 })), Err(ConfigError::UnknownKey(key)) if key == "bogus")
    );
}

/// `docs/config.schema.json` is exactly `CodeModeConfig::json_schema()` (pretty JSON, trailing
/// newline), so the published schema cannot drift. `CODEMODE_UPDATE_SCHEMA=1 cargo test -p
/// codemode-config --test config` rewrites the file.
#[test]
fn json_schema_is_published_in_docs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.schema.json");
    let expected = serde_json::to_string_pretty(&CodeModeConfig::json_schema()).unwrap() + "\n";
    if std::env::var_os("CODEMODE_UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &expected).unwrap();
    }
    let published = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        published == expected,
        "docs/config.schema.json is stale; run `CODEMODE_UPDATE_SCHEMA=1 cargo test -p codemode-config --test config`"
    );
}

/// The schema says what the parser does: fields optional, never nullable; integers with their
/// floors; languages a non-empty array.
#[test]
fn schema_and_parser_agree() {
    let schema = CodeModeConfig::json_schema();
    let settings = &schema["$defs"]["CodeModeSettings"];
    assert_eq!(settings["additionalProperties"], json!(false));
    assert!(settings.get("required").is_none(), "{settings:#}");
    let properties = settings["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 17);
    for (name, property) in properties {
        let kind = property["type"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {property}"));
        // Every field refuses null, in the schema as in the parser.
        let parsed = CodeModeConfig::from_json(&json!({ name.as_str(): null }));
        assert!(parsed.is_err(), "{name}: null accepted");
        let floor = match kind {
            "integer" => property["minimum"].as_u64().unwrap(),
            "boolean" | "array" => continue,
            "string" => {
                // An enumeration: each value is accepted, anything else is not.
                for value in property["enum"].as_array().unwrap() {
                    assert!(CodeModeConfig::from_json(&json!({ name.as_str(): value })).is_ok());
                }
                assert!(CodeModeConfig::from_json(&json!({ name.as_str(): "other" })).is_err());
                continue;
            }
            other => panic!("{name}: unexpected type {other}"),
        };
        // The floor is accepted, below it is not.
        assert!(
            CodeModeConfig::from_json(&json!({ name.as_str(): floor })).is_ok(),
            "{name}"
        );
        if floor > 0 {
            assert!(
                CodeModeConfig::from_json(&json!({ name.as_str(): floor - 1 })).is_err(),
                "{name}"
            );
        }
    }
    assert_eq!(properties["maxQueuedToolCalls"]["minimum"], json!(0));
    assert_eq!(properties["languages"]["minItems"], json!(1));
    assert_eq!(
        properties["isolation"]["enum"],
        json!(["thread", "process"])
    );
    assert_eq!(properties["isolation"]["default"], json!("thread"));
    assert_eq!(properties["timeoutMs"]["default"], json!(10000));
}

#[test]
fn integral_floats_are_integers_and_fractions_are_not() {
    let parse = |field: &str, value: Value| CodeModeConfig::from_json(&json!({ field: value }));
    assert_eq!(parse("timeoutMs", json!(500.0)).unwrap().timeout_ms(), 500);
    let thousand: Value = serde_json::from_str("1e3").unwrap();
    assert!(thousand.is_f64());
    assert_eq!(parse("timeoutMs", thousand).unwrap().timeout_ms(), 1000);
    assert_eq!(
        parse("maxSearchLimit", json!(5.0))
            .unwrap()
            .max_search_limit(),
        5
    );
    // Huge integral floats are clamped like huge integers.
    assert_eq!(
        parse("timeoutMs", json!(1e300)).unwrap().timeout_ms(),
        60_000
    );
    assert_eq!(
        parse("maxQueuedToolCalls", json!(0.0))
            .unwrap()
            .max_queued_tool_calls(),
        0
    );
    for bad in [
        json!(5.5),
        json!(-5.0),
        json!(-1),
        json!(0.0),
        json!("5"),
        json!(null),
        json!(1e-3),
    ] {
        check(
            json!({ "timeoutMs": bad }),
            Err("tools.codeMode.timeoutMs must be a positive integer."),
        );
    }
    for bad in [json!(0.5), json!(-1.0), json!("0"), json!(null)] {
        check(
            json!({ "maxQueuedToolCalls": bad }),
            Err("tools.codeMode.maxQueuedToolCalls must be a non-negative integer."),
        );
    }
    check(
        json!({ "enabled": null }),
        Err("tools.codeMode.enabled must be a boolean."),
    );
    check(
        json!({ "languages": null }),
        Err(
            "tools.codeMode.languages must be a non-empty array of \"javascript\" and \"typescript\".",
        ),
    );
}

#[test]
fn max_queued_tool_calls_accepts_zero_and_clamps() {
    let parse = |value: Value| CodeModeConfig::from_json(&json!({ "maxQueuedToolCalls": value }));
    assert_eq!(parse(json!(0)).unwrap().max_queued_tool_calls(), 0);
    assert_eq!(parse(json!(5)).unwrap().max_queued_tool_calls(), 5);
    assert_eq!(
        parse(json!(10_000_000)).unwrap().max_queued_tool_calls(),
        100_000
    );
    assert_eq!(
        CodeModeConfig::default().max_queued_tool_calls(),
        codemode_config::DEFAULT_MAX_QUEUED_TOOL_CALLS
    );
    assert_eq!(
        parse(json!(-1)).unwrap_err().to_string(),
        "tools.codeMode.maxQueuedToolCalls must be a non-negative integer."
    );
}

/// The Rust builder goes through the same table as `from_json`: for every integer field and
/// every value (zero, under the floor, in range, over the ceiling), both give the same config
/// or the same error.
#[test]
fn the_builder_checks_and_clamps_like_json() {
    use codemode_config::CodeModeConfigBuilder;
    use std::time::Duration;
    type Set = fn(CodeModeConfigBuilder, u64) -> CodeModeConfigBuilder;
    let fields: [(&str, Set); 12] = [
        ("timeoutMs", |b, v| b.timeout(Duration::from_millis(v))),
        ("memoryLimitBytes", |b, v| b.memory_limit_bytes(v)),
        ("maxOutputBytes", |b, v| b.max_output_bytes(v)),
        ("maxSnapshotBytes", |b, v| b.max_snapshot_bytes(v)),
        ("maxPendingToolCalls", |b, v| b.max_pending_tool_calls(v)),
        ("maxQueuedToolCalls", |b, v| b.max_queued_tool_calls(v)),
        ("maxSavedResults", |b, v| b.max_saved_results(v)),
        ("maxSavedResultBytes", |b, v| b.max_saved_result_bytes(v)),
        ("snapshotTtlSeconds", |b, v| {
            b.snapshot_ttl(Duration::from_secs(v))
        }),
        ("maxWaitMs", |b, v| b.max_wait(Duration::from_millis(v))),
        ("searchDefaultLimit", |b, v| b.search_default_limit(v)),
        ("maxSearchLimit", |b, v| b.max_search_limit(v)),
    ];
    for (key, set) in fields {
        for value in [0, 1, 5, 1000, 50_000, 10_000_000, u64::MAX / 2] {
            let built = set(CodeModeConfig::enabled(), value).build();
            let parsed = CodeModeConfig::from_json(&json!({ "enabled": true, key: value }));
            assert_eq!(built, parsed, "{key} = {value}");
        }
    }
    // The zero that used to make every exec a timeout is refused, as in JSON.
    assert_eq!(
        CodeModeConfig::enabled()
            .timeout(Duration::ZERO)
            .build()
            .unwrap_err()
            .to_string(),
        "tools.codeMode.timeoutMs must be a positive integer."
    );
    // The first refusal wins; later valid settings do not hide it.
    assert_eq!(
        CodeModeConfig::enabled()
            .max_saved_results(0)
            .timeout(Duration::from_secs(1))
            .build(),
        Err(ConfigError::NotPositiveInteger("maxSavedResults"))
    );
    // Sub-unit durations round toward acceptance (then clamp), never to a refused zero.
    let tiny = CodeModeConfig::enabled()
        .timeout(Duration::from_micros(1))
        .snapshot_ttl(Duration::from_millis(1))
        .build()
        .unwrap();
    assert_eq!((tiny.timeout_ms(), tiny.snapshot_ttl_seconds()), (100, 1));
    // The cross-field clamp: searchDefaultLimit <= maxSearchLimit.
    let search = CodeModeConfig::enabled()
        .search_default_limit(40)
        .max_search_limit(10)
        .build()
        .unwrap();
    assert_eq!(search.search_default_limit(), 10);
    assert_eq!(
        CodeModeConfig::enabled().languages([]).build(),
        Err(ConfigError::InvalidLanguages)
    );
    let js = CodeModeConfig::enabled()
        .languages([Language::Javascript, Language::Javascript])
        .build()
        .unwrap();
    assert_eq!(js.languages(), [Language::Javascript]);
    assert!(!CodeModeConfig::builder().build().unwrap().is_enabled());
    assert!(
        CodeModeConfig::builder()
            .enable(true)
            .build()
            .unwrap()
            .is_enabled()
    );
    assert_eq!(
        CodeModeConfig::enabled().build().unwrap(),
        CodeModeConfig::from_json(&json!(true)).unwrap()
    );
}
