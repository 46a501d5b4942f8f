//! Property tests: arbitrary scope trees never panic, and either serialize
//! into a descriptor that rebuilds the scope exactly or fail with a clear error.

use std::collections::BTreeSet;
use std::sync::Arc;

use codemode_namespaces::{
    CODE_MODE_GLOBALS, CatalogTool, JS_BUILTIN_GLOBALS, NamespaceError, NamespaceRegistry,
    NamespaceRuntime, OBJECT_PROTOTYPE_MEMBERS, Registration, ScopeContext, ScopeLimits,
    ScopeValue, ToolOwner, check_global_name,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NAMESPACE: &str = "prop-ns";
const DECLARED: [&str; 2] = ["t_list", "t_update"];

fn catalog() -> Vec<CatalogTool<'static>> {
    vec![
        CatalogTool::new("openclaw:plug:t_list", "t_list").with_owner(ToolOwner::Plugin("plug")),
        CatalogTool::new("openclaw:plug:t_update", "t_update")
            .with_owner(ToolOwner::Plugin("plug")),
        CatalogTool::new("openclaw:core:t_other", "t_other"),
    ]
}

fn catalog_id(tool: &str) -> String {
    format!("openclaw:plug:{tool}")
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z]{1,3}",
        1 => prop_oneof![
            Just("__proto__".to_owned()),
            Just("constructor".to_owned()),
            Just("prototype".to_owned()),
            Just(String::new()),
            Just("a.b".to_owned()),
        ],
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    scalar.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            // JSON data keys are verbatim data: unsafe names are allowed here.
            prop::collection::btree_map(key(), inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn tool() -> impl Strategy<Value = ScopeValue> {
    prop_oneof![
        4 => prop::sample::select(DECLARED.to_vec()).prop_map(ScopeValue::tool),
        1 => prop_oneof![Just("t_other"), Just("undeclared"), Just("")].prop_map(ScopeValue::tool),
    ]
}

fn scope_value() -> impl Strategy<Value = ScopeValue> {
    let leaf = prop_oneof![json_leaf().prop_map(ScopeValue::Json), tool()];
    leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            4 => prop::collection::vec((key(), inner.clone()), 0..4).prop_map(ScopeValue::object),
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(ScopeValue::array),
            1 => inner.clone().prop_map(|value| ScopeValue::Shared(Arc::new(value))),
            // One sub-value referenced from two members.
            1 => inner.prop_map(|value| {
                let shared = Arc::new(value);
                ScopeValue::object([
                    ("first", ScopeValue::Shared(Arc::clone(&shared))),
                    ("second", ScopeValue::Shared(shared)),
                ])
            }),
        ]
    })
}

fn root() -> impl Strategy<Value = ScopeValue> {
    prop_oneof![
        6 => prop::collection::vec((key(), scope_value()), 0..5).prop_map(ScopeValue::object),
        1 => scope_value(),
    ]
}

/// The model's JSON rendering of a callable marker.
fn marker(tool: &str) -> Value {
    json!({ "\u{0}callable": tool })
}

/// An independent model of the serializer's rules: `Some(rendering)` when the
/// scope is valid (callables rendered as markers, shared values expanded),
/// `None` when it must be rejected.
fn model(value: &ScopeValue, in_array: bool) -> Option<Value> {
    match value {
        ScopeValue::Json(json) => Some(json.clone()),
        ScopeValue::Tool(tool) => {
            (!in_array && DECLARED.contains(&tool.tool_name())).then(|| marker(tool.tool_name()))
        }
        ScopeValue::Shared(inner) => model(inner, in_array),
        ScopeValue::Array(items) => items
            .iter()
            .map(|item| model(item, true))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        ScopeValue::Object(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                let unsafe_key = key.is_empty()
                    || key.contains('.')
                    || ["__proto__", "constructor", "prototype"].contains(&key.as_str());
                if unsafe_key || map.contains_key(key) {
                    return None;
                }
                map.insert(key.clone(), model(value, in_array)?);
            }
            Some(Value::Object(map))
        }
    }
}

fn model_root(root: &ScopeValue) -> Option<Value> {
    match root {
        ScopeValue::Shared(inner) => model_root(inner),
        ScopeValue::Object(_) => model(root, false),
        ScopeValue::Json(Value::Object(map)) => {
            // Root JSON keys become path segments, so they must be safe.
            let entries = map
                .iter()
                .map(|(key, value)| (key.clone(), ScopeValue::Json(value.clone())))
                .collect();
            model(&ScopeValue::Object(entries), false)
        }
        _ => None,
    }
}

/// Sets `value` at `path` in `target`, creating objects on the way; `Err` if the
/// path runs through a non-object or overwrites something.
fn set_at(target: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("empty path".into());
    };
    let mut node = target;
    for segment in parents {
        node = node
            .as_object_mut()
            .ok_or_else(|| format!("{segment}: parent is not an object"))?
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let object = node
        .as_object_mut()
        .ok_or_else(|| format!("{last}: parent is not an object"))?;
    if object.insert(last.clone(), value).is_some() {
        return Err(format!("{last}: set twice"));
    }
    Ok(())
}

fn prepare(root: ScopeValue) -> Result<NamespaceRuntime, NamespaceError> {
    let registry = NamespaceRegistry::new().with_limits(
        ScopeLimits::new()
            .with_max_depth(usize::MAX)
            .with_max_nodes(usize::MAX),
    );
    registry.register_for_plugin(
        "plug",
        Registration::new(NAMESPACE, "Prop", move |_| Ok(root.clone()))
            .with_required_tools(DECLARED),
    )?;
    registry.prepare_run(catalog(), &ScopeContext::default())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_scopes_serialize_exactly_when_valid(root in root()) {
        let expected = model_root(&root);
        match prepare(root) {
            Ok(runtime) => {
                let Some(expected) = expected else {
                    return Err(TestCaseError::fail("accepted a scope the model rejects"));
                };
                let namespace = &runtime.namespaces()[0];
                // Rebuild the guest object from the descriptor: it must equal the model.
                let mut rebuilt = Value::Object(Map::new());
                let mut callable_keys = BTreeSet::new();
                for (path, value) in &namespace.values {
                    set_at(&mut rebuilt, path, value.clone()).map_err(TestCaseError::fail)?;
                }
                for path in &namespace.callables {
                    let key = NamespaceRuntime::path_key(path);
                    let target = runtime
                        .dispatch(NAMESPACE, &key, &[json!({ "k": 1 })], false)
                        .map_err(|error| TestCaseError::fail(error.to_string()))?;
                    prop_assert!(DECLARED.contains(&target.tool_name.as_str()));
                    prop_assert_eq!(&target.catalog_id, &catalog_id(&target.tool_name));
                    prop_assert_eq!(&target.input, &json!({ "k": 1 }));
                    set_at(&mut rebuilt, path, marker(&target.tool_name))
                        .map_err(TestCaseError::fail)?;
                    callable_keys.insert(key);
                }
                prop_assert_eq!(rebuilt, expected);
                // Values are never callable; paths never empty and segments safe.
                for (path, _) in &namespace.values {
                    let key = NamespaceRuntime::path_key(path);
                    if !callable_keys.contains(&key) {
                        let refused = runtime.dispatch(NAMESPACE, &key, &[], false);
                        prop_assert!(
                            matches!(refused, Err(NamespaceError::NotCallable { .. })),
                            "{:?}", refused
                        );
                    }
                }
                for path in namespace.values.iter().map(|(path, _)| path).chain(&namespace.callables) {
                    prop_assert!(!path.is_empty());
                    for segment in path {
                        prop_assert!(!segment.is_empty() && !segment.contains('.'));
                        prop_assert!(!["__proto__", "constructor", "prototype"].contains(&segment.as_str()));
                    }
                }
            }
            Err(error) => {
                prop_assert!(expected.is_none(), "rejected a valid scope: {}", error);
                let message = error.to_string();
                prop_assert!(message.contains(&format!("`{NAMESPACE}`")), "{}", message);
                prop_assert!(message.ends_with('.'), "{}", message);
            }
        }
    }

    #[test]
    fn forged_calls_never_panic_and_only_serialized_callables_dispatch(
        root in root(),
        namespace in prop_oneof![Just(NAMESPACE.to_owned()), ".{0,12}"],
        path in prop_oneof!["[a-z.]{0,12}", ".{0,16}"],
        args in prop::collection::vec(json_leaf(), 0..3),
        restart_safe in any::<bool>(),
    ) {
        let Ok(runtime) = prepare(root) else { return Ok(()); };
        let callables: BTreeSet<String> = runtime.namespaces()[0]
            .callables
            .iter()
            .map(|path| NamespaceRuntime::path_key(path))
            .collect();
        let outcome = runtime.dispatch(&namespace, &path, &args, restart_safe);
        let should_dispatch = !restart_safe && namespace == NAMESPACE && callables.contains(&path);
        prop_assert_eq!(outcome.is_ok(), should_dispatch, "{:?}", outcome);
        if restart_safe {
            prop_assert_eq!(outcome, Err(NamespaceError::RestartSafe));
        }
    }

    #[test]
    fn global_name_check_never_panics_and_accepts_only_plain_identifiers(name in ".{0,12}|[A-Za-z_$][A-Za-z0-9_$]{0,8}") {
        if check_global_name(&name).is_ok() {
            let mut chars = name.chars();
            let first = chars.next();
            prop_assert!(first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$'));
            prop_assert!(chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$'));
            prop_assert!(!CODE_MODE_GLOBALS.contains(&name.as_str()));
            prop_assert!(!JS_BUILTIN_GLOBALS.contains(&name.as_str()));
            prop_assert!(!OBJECT_PROTOTYPE_MEMBERS.contains(&name.as_str()));
            prop_assert!(!codemode_guest_names::is_reserved_word(&name));
            prop_assert!(!name.to_ascii_lowercase().starts_with("__openclaw"));
        }
    }

    #[test]
    fn visibility_needs_every_trimmed_required_tool_owned_by_the_plugin(
        required in prop::collection::vec(prop_oneof![
            Just("t_list"), Just(" t_list "), Just("t_update"), Just("t_other"), Just("missing"), Just(""),
        ], 1..5),
    ) {
        let registry = NamespaceRegistry::new();
        let registration = Registration::new(NAMESPACE, "Prop", |_| Ok(ScopeValue::object::<_, String>([])))
            .with_required_tools(required.clone());
        let trimmed: BTreeSet<&str> = required.iter().map(|name| name.trim()).filter(|name| !name.is_empty()).collect();
        match registry.register_for_plugin("plug", registration) {
            Err(error) => {
                prop_assert!(trimmed.is_empty());
                prop_assert!(
                    matches!(error, NamespaceError::NoRequiredTools { .. }),
                    "{:?}", error
                );
            }
            Ok(()) => {
                let runtime = registry.prepare_run(catalog(), &ScopeContext::default())
                    .map_err(|error| TestCaseError::fail(error.to_string()))?;
                // t_other exists but is not owned by the plugin; missing does not exist.
                let visible = trimmed.iter().all(|name| DECLARED.contains(name));
                prop_assert_eq!(!runtime.is_empty(), visible);
                prop_assert_eq!(runtime.prompt_text().is_some(), visible);
            }
        }
    }
}
