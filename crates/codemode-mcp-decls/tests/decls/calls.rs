//! Table tests: call preparation (argument shape, defaults, required keys).

use codemode_mcp_decls::{DeclError, McpDecls, McpServer, McpTool};
use serde_json::{Value, json};

fn decls_for(schema: Value) -> McpDecls {
    McpDecls::generate(&[McpServer {
        name: "github".into(),
        tools: vec![McpTool {
            name: "create_issue".into(),
            catalog_id: "mcp:github:create_issue".into(),
            input_schema: schema.into(),
            ..Default::default()
        }],
        ..Default::default()
    }])
}

/// Prepares a call of a tool with `schema`; `expect` is the input or the error message.
fn check(schema: Value, args: &[Value], expect: Result<Value, &str>) {
    let decls = decls_for(schema.clone());
    let got = decls
        .prepare_call("mcp:github:create_issue", args)
        .map_err(|e| e.to_string());
    assert_eq!(
        got,
        expect.map_err(str::to_owned),
        "schema {schema} args {args:?}"
    );
}

fn issue_schema() -> Value {
    json!({"type": "object", "required": ["owner", "repo", "title"], "properties": {
        "owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"},
        "labels": {"type": "array", "default": ["triage"]},
        "draft": {"type": "boolean", "default": false}}})
}

#[test]
fn required_and_defaults() {
    let full = json!({"owner": "o", "repo": "r", "title": "t"});
    check(
        issue_schema(),
        std::slice::from_ref(&full),
        Ok(json!({"owner": "o", "repo": "r", "title": "t", "labels": ["triage"], "draft": false})),
    );
    // Given values win over defaults, `null` included.
    check(
        issue_schema(),
        &[json!({"owner": "o", "repo": "r", "title": "t", "draft": true, "labels": null})],
        Ok(json!({"owner": "o", "repo": "r", "title": "t", "draft": true, "labels": null})),
    );
    check(
        issue_schema(),
        &[json!({"owner": "o"})],
        Err("Missing required MCP namespace argument(s): repo, title"),
    );
    check(
        issue_schema(),
        &[json!({})],
        Err("Missing required MCP namespace argument(s): owner, repo, title"),
    );
    check(
        issue_schema(),
        &[],
        Err("Missing required MCP namespace argument(s): owner, repo, title"),
    );
    // A default satisfies a required key.
    check(
        json!({"required": ["mode"], "properties": {"mode": {"default": "fast"}}}),
        &[],
        Ok(json!({"mode": "fast"})),
    );
    // Required keys without property schemas still count; duplicates are listed once.
    check(
        json!({"required": ["a", "b", "a", 7]}),
        &[json!({"b": 1})],
        Err("Missing required MCP namespace argument(s): a"),
    );
    // Unknown extra keys pass through untouched.
    check(
        json!({"type": "object"}),
        &[json!({"x": {"y": 1}})],
        Ok(json!({"x": {"y": 1}})),
    );
}

#[test]
fn nested_and_referenced_defaults() {
    let schema = json!({"type": "object", "properties": {
        "options": {"type": "object", "properties": {"depth": {"type": "integer", "default": 2}}},
        "person": {"$ref": "#/$defs/person"}},
        "$defs": {"person": {"type": "object", "default": {"name": "anon"},
            "properties": {"name": {"type": "string"}, "email": {"default": "none"}}}}});
    check(
        schema.clone(),
        &[json!({"options": {}})],
        Ok(json!({"options": {"depth": 2}, "person": {"name": "anon"}})),
    );
    check(
        schema.clone(),
        &[json!({"person": {"name": "x"}})],
        Ok(json!({"person": {"name": "x", "email": "none"}})),
    );
    // A missing nested object gets no partial defaults of its own.
    check(
        schema,
        &[json!({"person": null})],
        Ok(json!({"person": null})),
    );
}

#[test]
fn argument_shape_errors() {
    let schema = json!({"type": "object"});
    check(schema.clone(), &[json!(null)], Ok(json!({})));
    check(
        schema.clone(),
        &[json!("owner/repo")],
        Err(
            "MCP.github.createIssue takes one object argument (MCP.github.createIssue({ ... })), got a string",
        ),
    );
    check(
        schema.clone(),
        &[json!([1])],
        Err(
            "MCP.github.createIssue takes one object argument (MCP.github.createIssue({ ... })), got an array",
        ),
    );
    check(
        schema.clone(),
        &[json!(3)],
        Err(
            "MCP.github.createIssue takes one object argument (MCP.github.createIssue({ ... })), got a number",
        ),
    );
    check(
        schema,
        &[json!({}), json!({})],
        Err(
            "MCP.github.createIssue takes exactly one object argument (MCP.github.createIssue({ ... })), got 2 arguments",
        ),
    );
}

#[test]
fn unknown_catalog_id() {
    let decls = decls_for(json!({}));
    let err = decls
        .prepare_call("mcp:github:delete_repo", &[json!({})])
        .unwrap_err();
    assert!(matches!(err, DeclError::UnknownCatalogId { .. }));
    assert_eq!(
        err.to_string(),
        "unknown MCP tool catalog id \"mcp:github:delete_repo\""
    );
}

#[test]
fn broken_schemas_do_not_break_calls() {
    for schema in [
        json!(null),
        json!("object"),
        json!([1, 2]),
        json!(true),
        json!({"properties": 5, "required": "a"}),
        json!({"properties": {"a": 5, "b": {"default": 1}}}),
        json!({"$ref": "#"}),
        json!({"$ref": "#/nope"}),
    ] {
        check(
            schema.clone(),
            &[json!({"k": 1})],
            Ok(if schema.pointer("/properties/b").is_some() {
                json!({"k": 1, "b": 1})
            } else {
                json!({"k": 1})
            }),
        );
    }
}

#[test]
fn many_missing_keys_are_bounded_in_the_message() {
    let names: Vec<String> = (0..500).map(|i| format!("k{i}")).collect();
    let decls = decls_for(json!({"required": names}));
    let err = decls
        .prepare_call("mcp:github:create_issue", &[])
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("Missing required MCP namespace argument(s): k0, k1, "));
    assert!(msg.ends_with("k19 and 480 more"), "{msg}");
}
