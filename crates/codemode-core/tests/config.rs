//! The `tools.codeMode` contract (SPEC §3).

use codemode_core::{CodeModeConfig, ConfigError, Language};
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

#[test]
fn json_schema_is_published() {
    insta::assert_json_snapshot!("code_mode_config_schema", CodeModeConfig::json_schema());
}

#[test]
fn max_queued_tool_calls_accepts_zero_and_clamps() {
    let parse = |value: Value| CodeModeConfig::from_json(&json!({ "maxQueuedToolCalls": value }));
    assert_eq!(parse(json!(0)).unwrap().max_queued_tool_calls, 0);
    assert_eq!(parse(json!(5)).unwrap().max_queued_tool_calls, 5);
    assert_eq!(
        parse(json!(10_000_000)).unwrap().max_queued_tool_calls,
        100_000
    );
    assert_eq!(
        CodeModeConfig::default().max_queued_tool_calls,
        codemode_core::DEFAULT_MAX_QUEUED_TOOL_CALLS
    );
    assert_eq!(
        parse(json!(-1)).unwrap_err().to_string(),
        "tools.codeMode.maxQueuedToolCalls must be a non-negative integer."
    );
}
