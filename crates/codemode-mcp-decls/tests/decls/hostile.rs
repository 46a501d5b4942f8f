//! Hostile and broken schemas and names: bounded, valid output, no panic.

use codemode_mcp_decls::{DeclLimits, McpDecls, McpServer, McpTool};
use serde_json::{Map, Value, json};

use crate::ts::assert_all_valid;

fn one_tool(name: &str, description: &str, schema: Value) -> McpDecls {
    McpDecls::generate(&[McpServer {
        name: "hostile".into(),
        tools: vec![McpTool {
            name: name.to_owned(),
            catalog_id: "mcp:hostile:t".into(),
            description: description.to_owned(),
            input_schema: schema.into(),
            output_schema: None,
        }],
        has_resources: true,
        has_prompts: true,
    }])
}

fn server_file(decls: &McpDecls) -> &str {
    decls.read(&decls.files()[1].path).expect("server file")
}

/// Generates, checks validity, and returns the tool's function line(s).
fn signature(schema: Value) -> String {
    let decls = one_tool("t", "", schema);
    assert_all_valid(&decls);
    let text = server_file(&decls);
    let start = text.find("  function t(").expect("declared");
    let end = text[start..]
        .find("Promise<")
        .map_or(text.len(), |e| start + e);
    text[start..end].to_owned()
}

#[test]
fn rendered_types_table() {
    for (schema, expect) in [
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            "  function t(input?: {\n    a?: string;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"enum": ["x", "y", 1, null, true]}}, "required": ["a"]}),
            "  function t(input: {\n    a: \"x\" | \"y\" | 1 | null | true;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "array", "items": {"enum": ["x", "y"]}}}}),
            "  function t(input?: {\n    a?: (\"x\" | \"y\")[];\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": ["string", "null"]}}}),
            "  function t(input?: {\n    a?: string | null;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}),
            "  function t(input?: {\n    a?: string | number;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}}}),
            "  function t(input?: {\n    a?: { b: boolean };\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "object"}}}),
            "  function t(input?: {\n    a?: Record<string, unknown>;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "object", "additionalProperties": {"type": "number"}}}}),
            "  function t(input?: {\n    a?: Record<string, number>;\n  }): ",
        ),
        (
            json!({"properties": {"a": {}}}),
            "  function t(input?: {\n    a?: unknown;\n  }): ",
        ),
        (
            json!({"properties": {"my-key": {"type": "string"}, "0": {"type": "number"}, "$ok_1": {}}}),
            "  function t(input?: {\n    $ok_1?: unknown;\n    \"0\"?: number;\n    \"my-key\"?: string;\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "array"}}}),
            "  function t(input?: {\n    a?: unknown[];\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}}}),
            "  function t(input?: {\n    a?: [string, number, ...unknown[]];\n  }): ",
        ),
        (
            json!({"properties": {"a": {"allOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {"type": "object", "properties": {"y": {"type": "number"}}}]}}}),
            "  function t(input?: {\n    a?: { x?: string } & { y?: number };\n  }): ",
        ),
        (
            json!({"properties": {"a": {"type": "string", "nullable": true}, "b": {"const": "fixed"}}}),
            "  function t(input?: {\n    a?: string | null;\n    b?: \"fixed\";\n  }): ",
        ),
        (
            json!({"properties": {"b": {"type": "string"}}, "required": ["a", "b"]}),
            "  function t(input: {\n    a: unknown;\n    b: string;\n  }): ",
        ),
        (
            json!({"type": "object", "properties": {}}),
            "  function t(input?: Record<string, unknown>): ",
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            "  function t(input?: Record<string, never>): ",
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            "  function t(input?: Record<string, string>): ",
        ),
        (
            json!({"type": "string"}),
            "  function t(input?: Record<string, unknown>): ",
        ),
        (
            json!({"$ref": "#/$defs/args", "$defs": {"args": {"properties": {"q": {"type": "string"}}, "required": ["q"]}}}),
            "  function t(input: {\n    q: string;\n  }): ",
        ),
        (
            json!({"anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "number"}}, "required": ["b"]}]}),
            "  function t(input?: { a: string } | { b: number }): ",
        ),
    ] {
        assert_eq!(signature(schema.clone()), expect, "schema {schema}");
    }
}

#[test]
fn non_object_roots_and_wrong_types() {
    for schema in [
        json!(null),
        json!(true),
        json!(false),
        json!(5),
        json!("object"),
        json!([{"type": "object"}]),
        json!({"type": 5}),
        json!({"type": {"a": 1}}),
        json!({"type": ["string", 5, null]}),
        json!({"type": "strang"}),
        json!({"type": "string"}),
        json!({"properties": [1, 2]}),
        json!({"properties": {"a": 5, "b": "x", "c": null}}),
        json!({"required": "a"}),
        json!({"required": [1, {}, null]}),
        json!({"enum": "x"}),
        json!({"enum": []}),
        json!({"items": 5}),
        json!({"anyOf": 7}),
        json!({"oneOf": [5, "x", null]}),
        json!({"allOf": [{}, true, false]}),
        json!({"$ref": 5}),
        json!({"$ref": "http://example.invalid/schema"}),
        json!({"$ref": "#/%%%/~9"}),
        json!({"properties": {"a": {"enum": [{"x": 1}, [1]]}}}),
        json!({"properties": {"a": {"const": {"x": [1]}}}}),
        json!({"properties": {"a": {"type": "number", "default": 1e300}}}),
        json!({"properties": {"a": {"enum": [-1, 2.5, 18446744073709551615u64]}}}),
    ] {
        let decls = one_tool("t", "d", schema.clone());
        assert_all_valid(&decls);
        // Calls still work with one object argument.
        assert!(
            decls
                .prepare_call("mcp:hostile:t", &[json!({"x": 1})])
                .is_ok()
                || schema.get("required").is_some(),
            "{schema}"
        );
    }
}

#[test]
fn recursive_refs_are_cut() {
    for schema in [
        json!({"$ref": "#"}),
        json!({"type": "object", "properties": {"self": {"$ref": "#"}}}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "number"}, "next": {"$ref": "#/$defs/node"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "properties": {"list": {"$ref": "#/$defs/node"}}}),
    ] {
        let decls = one_tool("t", "", schema.clone());
        assert_all_valid(&decls);
        assert!(server_file(&decls).len() < 20_000, "{schema}");
    }
    let linked = signature(
        json!({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "number"}, "next": {"$ref": "#/$defs/node"}}}}, "properties": {"list": {"$ref": "#/$defs/node"}}}),
    );
    assert_eq!(
        linked,
        "  function t(input?: {\n    list?: { next?: unknown; value?: number };\n  }): "
    );
}

#[test]
fn ten_thousand_properties() {
    let mut props = Map::new();
    let mut required = Vec::new();
    for i in 0..10_000 {
        props.insert(
            format!("p{i}"),
            json!({"type": "string", "description": "x".repeat(50), "default": "d"}),
        );
        if i % 2 == 0 {
            required.push(json!(format!("p{i}")));
        }
    }
    let schema = json!({"type": "object", "properties": props, "required": required});
    let decls = one_tool("t", "", schema);
    assert_all_valid(&decls);
    let text = server_file(&decls);
    assert!(
        text.len() < 64 * 1024,
        "declaration is {} bytes",
        text.len()
    );
    assert!(text.contains("    [key: string]: unknown;\n"));
    // Calls are not truncated: every default is filled, every required key is checked.
    let input = decls
        .prepare_call("mcp:hostile:t", &[])
        .expect("defaults satisfy required");
    assert_eq!(input.as_object().map(Map::len), Some(10_000));
}

/// `{"inner": value}` without `json!`, which would re-serialize `value` (quadratic when nesting).
fn wrap(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

fn nested(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth {
        let mut object = wrap("properties", wrap("inner", schema));
        object["type"] = json!("object");
        object["required"] = json!(["inner"]);
        schema = object;
    }
    schema
}

/// Runs `f` on a thread with a large stack: serde_json's own `Drop` of a 1,000-deep value
/// recurses (about 2 KB a level in debug builds); the crate itself never recurses that deep.
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic");
}

#[test]
fn thousand_deep_nesting() {
    with_big_stack(thousand_deep_nesting_body);
}

fn thousand_deep_nesting_body() {
    let decls = one_tool("t", "", nested(1_000));
    assert_all_valid(&decls);
    let text = server_file(&decls);
    assert!(text.len() < 4_000, "{}", text.len());
    assert!(text.contains("unknown"));
    // Deeply nested arguments get defaults only down to the depth bound: no stack overflow.
    let mut arg = json!({});
    for _ in 0..1_000 {
        arg = wrap("inner", arg);
    }
    assert!(decls.prepare_call("mcp:hostile:t", &[arg]).is_ok());
    // Wide unions nested deep: the node budget bounds the output.
    let mut wide = json!({"type": "string"});
    for _ in 0..6 {
        wide = json!({"anyOf": [wide.clone(), wide.clone(), wide.clone(), {"type": "object", "properties": {"a": wide.clone(), "b": wide}}]});
    }
    let decls = one_tool("t", "", json!({"properties": {"w": wide}}));
    assert_all_valid(&decls);
    assert!(
        server_file(&decls).len() < 40_000,
        "{}",
        server_file(&decls).len()
    );
}

#[test]
fn huge_descriptions_with_comment_terminators() {
    let evil = "*/ declare const pwned: 1; /* ".repeat(3_500); // ~100 KB
    assert!(evil.len() > 100_000);
    let schema = json!({"properties": {"a": {"type": "string", "description": evil}, evil.clone(): {"type": "string"}}});
    let decls = one_tool(&evil, &evil, schema);
    assert_all_valid(&decls);
    let text = server_file(&decls);
    assert!(text.len() < 8_000, "{}", text.len());
    // Still one statement (the namespace): the text stayed inside its comments, escaped.
    assert_eq!(crate::ts::parse_dts(text), Ok(1), "{text}");
    assert!(text.contains("   * *\\/ declare const pwned: 1; /* *\\/"));
    // The same goes for server names in comments and the index.
    let decls = McpDecls::generate(&[McpServer {
        name: evil.clone(),
        ..Default::default()
    }]);
    assert_all_valid(&decls);
    for file in decls.files() {
        assert!(file.text.len() < 16_000, "{}", file.text.len());
    }
    let index = decls.read("mcp/index.d.ts").expect("index");
    let server = decls.read(&decls.files()[1].path).expect("server file");
    // The index: the shared types and the `MCP` namespace; a server file: its namespace.
    assert_eq!(crate::ts::parse_dts(index).map(|n| n > 1), Ok(true));
    assert_eq!(crate::ts::parse_dts(server), Ok(1));
}

#[test]
fn line_terminators_and_controls_in_text() {
    let text = "line\rtwo\u{2028}three\u{2029}four\u{0}\u{1b}[31m\t*/\n// not code\n";
    let decls = one_tool(
        text,
        text,
        json!({"properties": {text: {"description": text, "enum": [text]}}}),
    );
    assert_all_valid(&decls);
    assert!(!server_file(&decls).contains('\u{2028}'));
    assert!(!server_file(&decls).contains('\u{0}'));
}

#[test]
fn many_tools_and_servers() {
    let tools: Vec<McpTool> = (0..300)
        .map(|i| McpTool {
            name: "same".into(),
            catalog_id: format!("mcp:s:{i}"),
            ..Default::default()
        })
        .collect();
    let servers: Vec<McpServer> = (0..4)
        .map(|_| McpServer {
            name: "same".into(),
            tools: tools.clone(),
            ..Default::default()
        })
        .collect();
    let decls = McpDecls::generate(&servers);
    assert_all_valid(&decls);
    assert_eq!(decls.servers()[3].ident, "same4");
    assert_eq!(decls.servers()[0].tools[299].ident, "same300");
    let index = decls.read("mcp/index.d.ts").expect("index");
    assert!(index.contains("and 260 more"));
}

#[test]
fn tight_limits_still_give_valid_output() {
    let limits = DeclLimits::default()
        .max_doc_chars(0)
        .max_param_doc_chars(0)
        .max_schema_depth(0)
        .max_type_nodes(0)
        .max_object_properties(0)
        .max_union_members(0)
        .max_literal_chars(0)
        .max_ident_chars(0)
        .max_index_tool_names(0);
    let decls = McpDecls::generate_with(&crate::fixtures::all(), &limits);
    assert_all_valid(&decls);
    with_big_stack(loose_limits_body);
}

fn loose_limits_body() {
    let loose = DeclLimits::default()
        .max_schema_depth(usize::MAX)
        .max_type_nodes(usize::MAX);
    let decls = McpDecls::generate_with(
        &[McpServer {
            name: "n".into(),
            tools: vec![McpTool {
                name: "t".into(),
                catalog_id: "c".into(),
                input_schema: nested(1_000).into(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        &loose,
    );
    assert_all_valid(&decls);
}

#[test]
fn api_schemas_of_hand_built_deep_values_are_cut() {
    with_big_stack(|| {
        let decls = one_tool("t", "", nested(1_000));
        let api = decls.api("hostile", Some("t"), true).expect("api");
        let mut depth = 0;
        let mut node = &api["tools"][0]["inputSchema"];
        while let Some(inner) = node.pointer("/properties/inner") {
            node = inner;
            depth += 1;
        }
        // 1,000 schema levels in (2 JSON nesting levels each), 128 JSON levels out: the
        // sub-schema at the cut is `true`, the schema that allows anything.
        assert_eq!(depth, 64);
        assert_eq!(node, &json!(true));
    });
}
