//! Properties over arbitrary names, schemas and arguments: never panics, always parses, bindings
//! are unique identifiers.

use std::collections::HashSet;

use codemode_mcp_decls::{DeclCache, McpDecls, McpServer, McpTool};
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::ts::assert_all_valid;

/// Text that stresses comments, string literals and identifiers.
fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_$][a-zA-Z0-9_$-]{0,12}",
        Just(String::new()),
        Just("*/".to_owned()),
        Just("constructor".to_owned()),
        Just("__proto__".to_owned()),
        Just("delete".to_owned()),
        "[ -~]{0,20}",
        "(\\*/|/\\*|\\\\|\"|'|`|\n|\r|\u{2028}|\u{2029}|\u{0}|🎉|数据|é|\\$\\{|<|>|@param){0,8}",
        any::<String>(),
    ]
}

const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "additionalProperties",
    "patternProperties",
    "description",
    "default",
    "nullable",
];

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        nasty_text().prop_map(Value::String),
        prop_oneof![
            Just("string"),
            Just("number"),
            Just("integer"),
            Just("boolean"),
            Just("null"),
            Just("object"),
            Just("array"),
            Just("#"),
            Just("#/properties/a"),
            Just("#/$defs/x")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ]
}

/// Arbitrary JSON biased towards JSON Schema keywords.
fn schema() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (prop_oneof![3 => prop::sample::select(KEYWORDS).prop_map(str::to_owned), 1 => nasty_text()], inner),
                0..6
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn tool() -> impl Strategy<Value = McpTool> {
    (
        nasty_text(),
        nasty_text(),
        nasty_text(),
        schema(),
        prop::option::of(schema()),
    )
        .prop_map(
            |(name, id, description, input_schema, output_schema)| McpTool {
                name,
                catalog_id: id,
                description,
                input_schema: input_schema.into(),
                output_schema: output_schema.map(Into::into),
            },
        )
}

fn server() -> impl Strategy<Value = McpServer> {
    (
        nasty_text(),
        prop::collection::vec(tool(), 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, tools, has_resources, has_prompts)| McpServer {
            name,
            tools,
            has_resources,
            has_prompts,
        })
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn generated_files_always_parse(servers in prop::collection::vec(server(), 0..4)) {
        let decls = McpDecls::generate(&servers);
        assert_all_valid(&decls);
        prop_assert_eq!(decls.files().len(), if servers.is_empty() { 0 } else { servers.len() + 1 });
        let mut server_idents = HashSet::new();
        for (binding, server) in decls.servers().iter().zip(&servers) {
            prop_assert!(is_identifier(&binding.ident), "{:?}", binding.ident);
            prop_assert!(server_idents.insert(binding.ident.clone()));
            let mut tool_idents = HashSet::new();
            for (tool, source) in binding.tools.iter().zip(&server.tools) {
                prop_assert!(is_identifier(&tool.ident), "{:?}", tool.ident);
                prop_assert!(!["constructor", "prototype", "__proto__", "resources", "prompts"].contains(&tool.ident.as_str()));
                prop_assert!(tool_idents.insert(tool.ident.clone()));
                prop_assert_eq!(&tool.catalog_id, &source.catalog_id);
                prop_assert_eq!(decls.binding(&binding.ident, &tool.ident), Some(tool));
            }
        }
        for file in decls.list(None).expect("list all") {
            prop_assert_eq!(decls.read(&file.path).map(str::len), Ok(file.bytes));
        }
    }

    #[test]
    fn prepare_call_never_panics(tool in tool(), args in prop::collection::vec(schema(), 0..3)) {
        let id = tool.catalog_id.clone();
        let decls = McpDecls::generate(&[McpServer { name: "s".into(), tools: vec![tool], ..Default::default() }]);
        match decls.prepare_call(&id, &args) {
            Ok(input) => {
                prop_assert!(input.is_object());
                if let [Value::Object(given)] = args.as_slice() {
                    for (k, v) in given {
                        prop_assert_eq!(input.get(k), Some(v), "given values are kept");
                    }
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn cache_hits_only_for_equal_servers(a in prop::collection::vec(server(), 0..3), b in prop::collection::vec(server(), 0..3)) {
        let cache = DeclCache::new(8);
        let da = cache.get(&a);
        let db = cache.get(&b);
        // Equal as serialized (order-sensitive, -0.0 != 0.0): that is what generation sees.
        let same = serde_json::to_string(&a).ok() == serde_json::to_string(&b).ok();
        prop_assert_eq!(std::sync::Arc::ptr_eq(&da, &db), same);
        prop_assert!(std::sync::Arc::ptr_eq(&da, &cache.get(&a)));
    }
}
