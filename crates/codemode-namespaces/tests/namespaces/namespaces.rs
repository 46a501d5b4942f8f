//! Registry, visibility, serialization and dispatch, along the seed's
//! namespace test checklist.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codemode_namespaces::{
    CancellationState, CatalogTool, NamespaceError, NamespaceRegistry, NamespaceRuntime,
    NamespaceTool, Registration, ScopeContext, ScopeLimits, ScopeValue, ToolOwner,
};
use serde_json::{Value, json};

const LIST_ID: &str = "openclaw:github:github_list_issues";
const UPDATE_ID: &str = "openclaw:github:github_update_issue";

/// The run catalog of a run where the GitHub plugin's tools are enabled.
fn github_catalog() -> Vec<CatalogTool<'static>> {
    vec![
        CatalogTool::new("openclaw:core:message", "message"),
        CatalogTool::new(LIST_ID, "github_list_issues").with_owner(ToolOwner::Plugin("github")),
        CatalogTool::new(UPDATE_ID, "github_update_issue").with_owner(ToolOwner::Plugin("github")),
    ]
}

/// The seed's example registration, with a scope built by `scope`.
fn issues(
    scope: impl Fn(&ScopeContext) -> Result<ScopeValue, String> + Send + Sync + 'static,
) -> Registration {
    Registration::new("github-issues", "Issues", scope)
        .with_description("Helpers for GitHub issues in the current repository.")
        .with_required_tools(["github_list_issues", "github_update_issue"])
        .with_prompt("Use Issues.list(params) and Issues.update(number, patch).")
}

/// The seed's example scope.
fn seed_scope(ctx: &ScopeContext) -> Result<ScopeValue, String> {
    Ok(ScopeValue::object([
        ("repository", ScopeValue::from(ctx.config.clone())),
        ("list", NamespaceTool::new("github_list_issues").into()),
        (
            "update",
            NamespaceTool::new("github_update_issue")
                .with_mapper(|args| Ok(json!({ "number": args.first(), "patch": args.get(1) })))
                .into(),
        ),
    ]))
}

fn registry_with(registration: Registration) -> NamespaceRegistry {
    let registry = NamespaceRegistry::new();
    registry
        .register_for_plugin("github", registration)
        .expect("test registration is valid");
    registry
}

fn ctx() -> ScopeContext {
    ScopeContext {
        config: json!({ "owner": "octo", "repo": "hello" }),
        ..ScopeContext::default()
    }
}

/// Prepares a run of `scope` under the seed registration; the error text on failure.
fn prepare(
    scope: impl Fn(&ScopeContext) -> Result<ScopeValue, String> + Send + Sync + 'static,
) -> Result<NamespaceRuntime, String> {
    registry_with(issues(scope))
        .prepare_run(github_catalog(), &ctx())
        .map_err(|error| error.to_string())
}

/// Registers `registration` for `plugin` in a registry that already holds the
/// seed namespace, and compares the outcome with `expect` ("ok" or the error text).
fn check(plugin: &str, registration: Registration, expect: &str) {
    let registry = registry_with(issues(seed_scope));
    let outcome = match registry.register_for_plugin(plugin, registration) {
        Ok(()) => "ok".to_owned(),
        Err(error) => error.to_string(),
    };
    assert_eq!(outcome, expect);
}

fn named(id: &str, global_name: &str) -> Registration {
    Registration::new(id, global_name, |_| Ok(ScopeValue::object::<_, String>([])))
        .with_required_tools(["tool"])
}

#[test]
fn registration_validation_names_the_problem() {
    check("cal", named("calendar", "Calendar"), "ok");
    check("cal", named("calendar", "$cal_2"), "ok");
    check("cal", named("calendar", "_Calendar"), "ok");
    check("cal", named("calendar", "Tools"), "ok");
    check(
        " ",
        named("calendar", "Calendar"),
        "code mode namespace registration needs a non-empty plugin id.",
    );
    check(
        "cal",
        named("  ", "Calendar"),
        "code mode namespace registration from plugin `cal` has an empty id.",
    );
    check(
        "cal",
        named("github-issues", "Calendar"),
        "code mode namespace id `github-issues` is already registered by plugin `github`; clear it before registering it again.",
    );
    check(
        "cal",
        named(" github-issues ", "Calendar"),
        "code mode namespace id `github-issues` is already registered by plugin `github`; clear it before registering it again.",
    );
    check(
        "cal",
        named("calendar", "Issues"),
        "code mode namespace `calendar`: global name `Issues` is already used by namespace `github-issues`.",
    );
    check(
        "cal",
        Registration::new("calendar", "Calendar", |_| {
            Ok(ScopeValue::object::<_, String>([]))
        })
        .with_required_tools(["", "  "]),
        "code mode namespace `calendar` must name at least one required tool (blank names do not count).",
    );
    check(
        "cal",
        Registration::new("calendar", "Calendar", |_| {
            Ok(ScopeValue::object::<_, String>([]))
        }),
        "code mode namespace `calendar` must name at least one required tool (blank names do not count).",
    );
}

#[test]
fn global_names_must_be_plain_identifiers() {
    let not_identifier = |name: &str, reason: &str| {
        check(
            "cal",
            named("calendar", name),
            &format!(
                "code mode namespace global name `{name}` is not a JavaScript identifier: {reason}."
            ),
        );
    };
    not_identifier("", "it is empty");
    not_identifier(
        "1Calendar",
        "it must start with an ASCII letter, `_` or `$`",
    );
    not_identifier(
        " Calendar",
        "it must start with an ASCII letter, `_` or `$`",
    );
    not_identifier(
        "my-calendar",
        "it may only contain ASCII letters, digits, `_` and `$`",
    );
    not_identifier(
        "Cal.endar",
        "it may only contain ASCII letters, digits, `_` and `$`",
    );
    not_identifier(
        "Calendário",
        "it may only contain ASCII letters, digits, `_` and `$`",
    );
    for word in [
        "class",
        "await",
        "yield",
        "let",
        "arguments",
        "null",
        "import",
    ] {
        not_identifier(word, "it is a JavaScript reserved word");
    }
}

/// The one reserved-word list of the workspace (`codemode-guest-names`, checked there against
/// the ECMAScript specification) is the one the global-name guard applies, `eval` included.
#[test]
fn every_shared_reserved_word_is_refused_as_a_global_name() {
    use codemode_guest_names::{RESERVED_WORDS, RESTRICTED_BINDINGS, STRICT_MODE_RESERVED_WORDS};
    for word in RESERVED_WORDS
        .iter()
        .chain(STRICT_MODE_RESERVED_WORDS)
        .chain(RESTRICTED_BINDINGS)
    {
        check(
            "cal",
            named("calendar", word),
            &format!(
                "code mode namespace global name `{word}` is not a JavaScript identifier: it is a JavaScript reserved word."
            ),
        );
    }
}

#[test]
fn global_names_must_not_shadow_code_mode_or_javascript_globals() {
    let reserved = |name: &str, reason: &str| {
        check(
            "cal",
            named("calendar", name),
            &format!("code mode namespace global name `{name}` is reserved: {reason}."),
        );
    };
    for name in [
        "tools",
        "namespaces",
        "text",
        "json",
        "yield_control",
        "MCP",
        "API",
        "ALL_TOOLS",
    ] {
        reserved(name, "code mode installs a global with this name");
    }
    for name in ["__openclaw", "__openclaw_bridge", "__OpenClawCall"] {
        reserved(
            name,
            "the `__openclaw` prefix is reserved for code mode's internal bridge",
        );
    }
    for name in [
        "Object",
        "JSON",
        "Promise",
        "globalThis",
        "NaN",
        "Infinity",
        "undefined",
        "Array",
        "Math",
        "Reflect",
        "Proxy",
        "console",
        "setTimeout",
        "require",
        "atob",
        "btoa",
        "DOMException",
        "performance",
    ] {
        reserved(name, "it is a JavaScript built-in global");
    }
    // The global object inherits these; a namespace of that name would shadow them.
    for name in [
        "toString",
        "valueOf",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "constructor",
        "__proto__",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
    ] {
        reserved(
            name,
            "every object, the global object included, inherits it from Object.prototype",
        );
    }
}

// Checklist: "the namespace prompt text appears only when the underlying tools are visible".
#[test]
fn prompt_text_appears_only_when_every_required_tool_is_visible() {
    let registry = registry_with(issues(seed_scope));

    let runtime = registry
        .prepare_run(github_catalog(), &ctx())
        .expect("visible");
    assert!(!runtime.is_empty());
    insta::assert_snapshot!(runtime.prompt_text().expect("prompt when visible"), @r"
    Plugin namespaces (each is a global and also `namespaces.<name>`; its functions return promises):
    - Issues: Helpers for GitHub issues in the current repository.
      Use Issues.list(params) and Issues.update(number, patch).
    ");

    // One required tool missing (e.g. denied by policy): hidden, and no prompt.
    let partial: Vec<_> = github_catalog()
        .into_iter()
        .filter(|tool| tool.name != "github_update_issue")
        .collect();
    let runtime = registry.prepare_run(partial, &ctx()).expect("prepared");
    assert!(runtime.is_empty());
    assert!(runtime.namespaces().is_empty());
    assert_eq!(runtime.prompt_text(), None);

    // Empty catalog: hidden too, and create_scope is never called.
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let counting = NamespaceRegistry::new();
    counting
        .register_for_plugin(
            "github",
            issues(move |ctx| {
                seen.fetch_add(1, Ordering::SeqCst);
                seed_scope(ctx)
            }),
        )
        .expect("valid");
    let runtime = counting.prepare_run([], &ctx()).expect("prepared");
    assert_eq!(runtime.prompt_text(), None);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    counting
        .prepare_run(github_catalog(), &ctx())
        .expect("visible");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn prompt_text_lists_several_namespaces_and_indents_multiline_prompts() {
    let registry = registry_with(issues(seed_scope));
    registry
        .register_for_plugin(
            "cal",
            Registration::new("calendar", "Calendar", |_| {
                Ok(ScopeValue::object([(
                    "today",
                    NamespaceTool::new("cal_today").into(),
                )]))
            })
            .with_required_tools(["cal_today"])
            .with_prompt("Use Calendar.today().\nDates are ISO 8601.  \n"),
        )
        .expect("valid");
    let mut catalog = github_catalog();
    catalog.push(
        CatalogTool::new("openclaw:cal:cal_today", "cal_today")
            .with_owner(ToolOwner::Plugin("cal")),
    );
    let runtime = registry.prepare_run(catalog, &ctx()).expect("visible");
    insta::assert_snapshot!(runtime.prompt_text().expect("prompt"), @r"
    Plugin namespaces (each is a global and also `namespaces.<name>`; its functions return promises):
    - Issues: Helpers for GitHub issues in the current repository.
      Use Issues.list(params) and Issues.update(number, patch).
    - Calendar
      Use Calendar.today().
      Dates are ISO 8601.
    ");
}

// Checklist: "same-named tools from another sourceName do not expose the namespace".
#[test]
fn same_named_tools_of_another_owner_do_not_expose_the_namespace() {
    let registry = registry_with(issues(seed_scope));
    let impostor = vec![
        CatalogTool::new("openclaw:evil:github_list_issues", "github_list_issues")
            .with_owner(ToolOwner::Plugin("evil")),
        CatalogTool::new("openclaw:evil:github_update_issue", "github_update_issue")
            .with_owner(ToolOwner::Plugin("evil")),
    ];
    let runtime = registry.prepare_run(impostor, &ctx()).expect("prepared");
    assert!(runtime.is_empty());
    assert_eq!(runtime.prompt_text(), None);

    // Half owned, half impostor: still hidden.
    let mixed = vec![
        CatalogTool::new(LIST_ID, "github_list_issues").with_owner(ToolOwner::Plugin("github")),
        CatalogTool::new("openclaw:evil:github_update_issue", "github_update_issue")
            .with_owner(ToolOwner::Plugin("evil")),
    ];
    assert!(
        registry
            .prepare_run(mixed, &ctx())
            .expect("prepared")
            .is_empty()
    );

    // Core tools do not count either.
    let core = vec![
        CatalogTool::new("openclaw:core:github_list_issues", "github_list_issues"),
        CatalogTool::new("openclaw:core:github_update_issue", "github_update_issue"),
    ];
    assert!(
        registry
            .prepare_run(core, &ctx())
            .expect("prepared")
            .is_empty()
    );
}

// An MCP server or a client owner named exactly like the plugin is not the plugin: only the
// plugin's own origin owns its namespace's tools, so a denied plugin tool cannot be replaced.
#[test]
fn mcp_or_client_tools_named_like_the_plugin_do_not_expose_the_namespace() {
    let registry = registry_with(issues(seed_scope));
    let impostors = [ToolOwner::McpServer("github"), ToolOwner::Client("github")];
    for owner in impostors {
        let catalog = vec![
            CatalogTool::new("x:github:github_list_issues", "github_list_issues").with_owner(owner),
            CatalogTool::new("x:github:github_update_issue", "github_update_issue")
                .with_owner(owner),
        ];
        let runtime = registry.prepare_run(catalog, &ctx()).expect("prepared");
        assert!(runtime.is_empty(), "{owner:?}");
        assert_eq!(runtime.prompt_text(), None, "{owner:?}");
    }
    // The plugin's list tool is denied (absent); an MCP server `github` offers one of the same
    // name: the namespace stays hidden rather than dispatching to the MCP tool.
    let catalog = vec![
        CatalogTool::new("mcp:github:github_list_issues", "github_list_issues")
            .with_owner(ToolOwner::McpServer("github")),
        CatalogTool::new(UPDATE_ID, "github_update_issue").with_owner(ToolOwner::Plugin("github")),
    ];
    assert!(
        registry
            .prepare_run(catalog, &ctx())
            .expect("prepared")
            .is_empty()
    );

    // Owner and impostor both present: visible, and calls go to the owner's exact id
    // even though the impostor comes first in catalog order.
    let mut both = vec![
        CatalogTool::new("openclaw:evil:github_list_issues", "github_list_issues")
            .with_owner(ToolOwner::Plugin("evil")),
    ];
    both.extend(github_catalog());
    let runtime = registry.prepare_run(both, &ctx()).expect("visible");
    let target = runtime
        .dispatch("github-issues", "list", &[], false)
        .expect("callable");
    assert_eq!(target.catalog_id, LIST_ID);
}

// Checklist: "raw scope functions are rejected". They cannot be written (see the
// compile_fail examples on ScopeValue); what a plugin CAN do wrong at run time is
// fail or panic in create_scope, which fails preparation before guest code runs.
#[test]
fn failing_or_panicking_create_scope_fails_preparation_with_the_namespace_named() {
    assert_eq!(
        prepare(|_| Err("token expired".to_owned())).expect_err("fails"),
        "code mode namespace `github-issues` could not create its scope: token expired"
    );
    let panicked = prepare(|_| panic!("client not configured")).expect_err("fails");
    assert_eq!(
        panicked,
        "code mode namespace `github-issues` could not create its scope: create_scope panicked: client not configured"
    );
}

#[test]
fn create_scope_receives_the_run_context() {
    let cancellation = CancellationState::new();
    cancellation.cancel();
    let ctx = ScopeContext {
        agent_id: Some("agent-1".into()),
        session_key: Some("key-1".into()),
        session_id: Some("session-1".into()),
        run_id: Some("run-1".into()),
        config: json!({ "timeoutMs": 1000 }),
        cancellation,
    };
    let registry = registry_with(issues(|ctx| {
        Ok(ScopeValue::object([
            (
                "seen",
                ScopeValue::from(json!({
                    "agent": ctx.agent_id,
                    "sessionKey": ctx.session_key,
                    "session": ctx.session_id,
                    "run": ctx.run_id,
                    "config": ctx.config,
                    "cancelled": ctx.cancellation.is_cancelled(),
                })),
            ),
            ("list", ScopeValue::tool("github_list_issues")),
        ]))
    }));
    let runtime = registry
        .prepare_run(github_catalog(), &ctx)
        .expect("visible");
    assert_eq!(
        runtime.namespaces()[0].values,
        vec![(
            vec!["seen".to_owned()],
            json!({
                "agent": "agent-1", "sessionKey": "key-1", "session": "session-1",
                "run": "run-1", "config": { "timeoutMs": 1000 }, "cancelled": true,
            })
        )]
    );
}

// Checklist: "forged namespace ids and forged paths are rejected".
#[test]
fn forged_namespace_ids_and_paths_are_refused() {
    let runtime = prepare(|ctx| {
        Ok(ScopeValue::object([
            ("repository", ScopeValue::from(ctx.config.clone())),
            ("list", ScopeValue::tool("github_list_issues")),
            (
                "labels",
                ScopeValue::object([
                    ("add", ScopeValue::tool("github_update_issue")),
                    ("known", ScopeValue::from(json!(["bug", "docs"]))),
                ]),
            ),
        ]))
    })
    .expect("visible");
    let refused = |namespace: &str, path: &str| {
        runtime
            .dispatch(namespace, path, &[json!({})], false)
            .expect_err("refused")
            .to_string()
    };

    assert_eq!(
        refused("github-issue", "list"),
        "unknown code mode namespace `github-issue`."
    );
    assert_eq!(refused("", "list"), "unknown code mode namespace ``.");
    assert_eq!(
        refused("Issues", "list"),
        "unknown code mode namespace `Issues`.",
        "the global name is not the id"
    );
    assert_eq!(
        refused("github-issues", "delete"),
        "code mode namespace `github-issues` has no function at `Issues.delete`."
    );
    assert_eq!(
        refused("github-issues", "labels.remove"),
        "code mode namespace `github-issues` has no function at `Issues.labels.remove`."
    );
    assert_eq!(
        refused("github-issues", "list.call"),
        "code mode namespace `github-issues` has no function at `Issues.list.call`."
    );
    assert_eq!(
        refused("github-issues", "__proto__"),
        "code mode namespace `github-issues` has no function at `Issues.__proto__`."
    );
    assert_eq!(
        refused("github-issues", "labels..add"),
        "code mode namespace `github-issues` has no function at `Issues.labels..add`."
    );
    assert_eq!(
        refused("github-issues", " list"),
        "code mode namespace `github-issues` has no function at `Issues. list`."
    );
    // Values, the inside of values, and the objects that hold callables are not functions.
    for (path, shown) in [
        ("repository", "Issues.repository"),
        ("repository.owner", "Issues.repository.owner"),
        ("labels", "Issues.labels"),
        ("labels.known", "Issues.labels.known"),
        ("labels.known.0", "Issues.labels.known.0"),
        ("", "Issues"),
    ] {
        assert_eq!(
            refused("github-issues", path),
            format!("code mode namespace `github-issues`: `{shown}` is not a function.")
        );
    }
    // A huge forged path is echoed shortened.
    let huge = "x".repeat(100_000);
    let message = refused("github-issues", &huge);
    assert!(message.len() < 400, "{} bytes", message.len());
    let message = refused(&huge, "list");
    assert!(message.len() < 400, "{} bytes", message.len());

    // Real paths still work.
    let target = runtime
        .dispatch("github-issues", "labels.add", &[json!({ "n": 1 })], false)
        .expect("callable");
    assert_eq!(target.catalog_id, UPDATE_ID);
    assert_eq!(target.tool_name, "github_update_issue");
}

#[test]
fn a_registered_but_hidden_namespace_cannot_be_called() {
    let registry = registry_with(issues(seed_scope));
    let runtime = registry.prepare_run([], &ctx()).expect("prepared");
    assert_eq!(
        runtime
            .dispatch("github-issues", "list", &[], false)
            .expect_err("hidden")
            .to_string(),
        "unknown code mode namespace `github-issues`."
    );
}

#[test]
fn restart_safe_runs_refuse_namespace_calls() {
    let runtime = prepare(seed_scope).expect("visible");
    let error = runtime
        .dispatch("github-issues", "list", &[], true)
        .expect_err("refused");
    assert_eq!(error, NamespaceError::RestartSafe);
    assert_eq!(
        error.to_string(),
        "restart-safe code mode cannot call plugin namespaces."
    );
}

// Checklist: "callable paths cannot target undeclared tools".
#[test]
fn callables_cannot_target_undeclared_tools() {
    // `message` is in the catalog, but not a required tool of the namespace.
    assert_eq!(
        prepare(|_| Ok(ScopeValue::object([("send", ScopeValue::tool("message"))])))
            .expect_err("undeclared"),
        "code mode namespace `github-issues`: `Issues.send` targets tool `message`, which is not one of the namespace's required tools."
    );
    assert_eq!(
        prepare(|_| {
            Ok(ScopeValue::object([(
                "admin",
                ScopeValue::object([("drop", ScopeValue::tool("github_delete_repo"))]),
            )]))
        })
        .expect_err("undeclared"),
        "code mode namespace `github-issues`: `Issues.admin.drop` targets tool `github_delete_repo`, which is not one of the namespace's required tools."
    );
    // The catalog id is never a valid tool name for a marker.
    assert!(
        prepare(|_| Ok(ScopeValue::object([("list", ScopeValue::tool(LIST_ID))])))
            .expect_err("undeclared")
            .contains("not one of the namespace's required tools")
    );
    assert!(
        prepare(|_| Ok(ScopeValue::object([("nothing", ScopeValue::tool(""))])))
            .expect_err("undeclared")
            .contains("targets tool ``")
    );
    // Hidden in a shared sub-object: still found.
    let shared = Arc::new(ScopeValue::object([(
        "sneaky",
        ScopeValue::tool("message"),
    )]));
    assert!(
        prepare(move |_| Ok(ScopeValue::object([(
            "a",
            ScopeValue::Shared(Arc::clone(&shared))
        )])))
        .expect_err("undeclared")
        .contains("`Issues.a.sneaky` targets tool `message`")
    );
}

#[test]
fn required_tool_names_are_trimmed_and_deduplicated() {
    let registry = NamespaceRegistry::new();
    registry
        .register_for_plugin(
            "github",
            Registration::new("github-issues", "Issues", |_| {
                Ok(ScopeValue::object([(
                    "list",
                    ScopeValue::tool("github_list_issues"),
                )]))
            })
            .with_required_tools([
                " github_list_issues ",
                "github_list_issues",
                "",
                "\t",
            ]),
        )
        .expect("valid after trimming");
    let runtime = registry
        .prepare_run(github_catalog(), &ctx())
        .expect("visible");
    assert_eq!(
        runtime
            .dispatch("github-issues", "list", &[], false)
            .expect("callable")
            .catalog_id,
        LIST_ID
    );
}

// Checklist: "nested objects and shared references serialize correctly".
#[test]
fn nested_objects_and_shared_references_serialize() {
    let paging = Arc::new(ScopeValue::from(json!({ "per_page": 50 })));
    let verbs = Arc::new(ScopeValue::object([
        ("list", ScopeValue::tool("github_list_issues")),
        ("defaults", ScopeValue::Shared(Arc::clone(&paging))),
    ]));
    let runtime = prepare(move |ctx| {
        Ok(ScopeValue::object([
            ("repository", ScopeValue::from(ctx.config.clone())),
            ("open", ScopeValue::Shared(Arc::clone(&verbs))),
            ("closed", ScopeValue::Shared(Arc::clone(&verbs))),
            (
                "labels",
                ScopeValue::object([
                    ("add", ScopeValue::tool("github_update_issue")),
                    (
                        "colors",
                        ScopeValue::object([
                            ("bug", ScopeValue::from("red")),
                            ("paging", ScopeValue::Shared(Arc::clone(&paging))),
                        ]),
                    ),
                    (
                        "known",
                        ScopeValue::array([ScopeValue::from("bug"), ScopeValue::from(true)]),
                    ),
                ]),
            ),
            ("empty", ScopeValue::object::<_, String>([])),
            ("update", ScopeValue::tool("github_update_issue")),
        ]))
    })
    .expect("serializes");
    insta::assert_json_snapshot!(runtime.namespaces());

    // Both copies of the shared verbs are callable and reach the same catalog id.
    for path in ["open.list", "closed.list"] {
        let target = runtime
            .dispatch("github-issues", path, &[json!({ "state": "open" })], false)
            .expect("callable");
        assert_eq!(target.catalog_id, LIST_ID);
        assert_eq!(target.input, json!({ "state": "open" }));
    }
    // Every advertised callable dispatches; every value path does not.
    let namespace = &runtime.namespaces()[0];
    for path in &namespace.callables {
        let key = NamespaceRuntime::path_key(path);
        assert!(
            runtime.dispatch(&namespace.id, &key, &[], false).is_ok(),
            "{key}"
        );
    }
    for (path, _) in &namespace.values {
        let key = NamespaceRuntime::path_key(path);
        assert!(
            runtime.dispatch(&namespace.id, &key, &[], false).is_err(),
            "{key}"
        );
    }
}

#[test]
fn an_empty_scope_still_gives_the_namespace_its_global() {
    let runtime = prepare(|_| Ok(ScopeValue::object::<_, String>([]))).expect("serializes");
    let namespace = &runtime.namespaces()[0];
    assert_eq!(namespace.global_name, "Issues");
    assert!(namespace.values.is_empty());
    assert!(namespace.callables.is_empty());
    assert!(runtime.prompt_text().is_some());
}

#[test]
fn a_json_object_can_be_the_whole_scope() {
    let runtime = prepare(|_| Ok(ScopeValue::from(json!({ "b": 2, "a": { "x": [1] } }))))
        .expect("serializes");
    let namespace = &runtime.namespaces()[0];
    assert_eq!(
        namespace.values,
        vec![
            (vec!["a".to_owned()], json!({ "x": [1] })),
            (vec!["b".to_owned()], json!(2)),
        ]
    );
    assert!(namespace.callables.is_empty());
}

#[test]
fn the_scope_root_must_be_an_object() {
    for (scope, found) in [
        (ScopeValue::array([]), "array"),
        (ScopeValue::from("Issues"), "string"),
        (ScopeValue::from(json!(null)), "null"),
        (ScopeValue::from(json!([1])), "array"),
        (ScopeValue::tool("github_list_issues"), "namespace tool"),
        (
            ScopeValue::Shared(Arc::new(ScopeValue::from(1_i64))),
            "number",
        ),
    ] {
        assert_eq!(
            prepare(move |_| Ok(scope.clone())).expect_err("not an object"),
            format!(
                "code mode namespace `github-issues`: the scope must be an object, found {found}."
            )
        );
    }
    // A shared object as the root is fine.
    let root = Arc::new(ScopeValue::object([(
        "list",
        ScopeValue::tool("github_list_issues"),
    )]));
    assert!(prepare(move |_| Ok(ScopeValue::Shared(Arc::clone(&root)))).is_ok());
}

#[test]
fn unsafe_path_segments_are_rejected() {
    let unsafe_key = |key: &'static str, nested: bool, reason: &str| {
        let scope = move |_: &ScopeContext| {
            let member = (key, ScopeValue::from(1_i64));
            Ok(if nested {
                ScopeValue::object([("inner", ScopeValue::object([member]))])
            } else {
                ScopeValue::object([member])
            })
        };
        let at = if nested { "Issues.inner" } else { "Issues" };
        assert_eq!(
            prepare(scope).expect_err("unsafe"),
            format!("code mode namespace `github-issues`: unsafe key {key:?} at `{at}`: {reason}.")
        );
    };
    for nested in [false, true] {
        for key in ["__proto__", "constructor", "prototype"] {
            unsafe_key(
                key,
                nested,
                "it could reach or replace a JavaScript prototype",
            );
        }
        unsafe_key("", nested, "keys must not be empty");
        unsafe_key(
            "a.b",
            nested,
            "keys must not contain the path separator `.`",
        );
        unsafe_key(".", nested, "keys must not contain the path separator `.`");
    }
    // Next to a callable, under a JSON-object root and inside arrays, too.
    assert!(
        prepare(|_| {
            Ok(ScopeValue::object([(
                "labels",
                ScopeValue::object([
                    ("add", ScopeValue::tool("github_update_issue")),
                    ("__proto__", ScopeValue::tool("github_list_issues")),
                ]),
            )]))
        })
        .expect_err("unsafe")
        .contains("unsafe key \"__proto__\" at `Issues.labels`")
    );
    let mut root = serde_json::Map::new();
    root.insert("__proto__".to_owned(), json!({ "polluted": true }));
    assert!(
        prepare(move |_| Ok(ScopeValue::from(Value::Object(root.clone()))))
            .expect_err("unsafe")
            .contains("unsafe key \"__proto__\" at `Issues`")
    );
    assert!(
        prepare(|_| {
            Ok(ScopeValue::object([(
                "rows",
                ScopeValue::array([ScopeValue::object([(
                    "constructor",
                    ScopeValue::from(1_i64),
                )])]),
            )]))
        })
        .expect_err("unsafe")
        .contains("unsafe key \"constructor\" at `Issues.rows.0`")
    );
}

#[test]
fn duplicate_keys_are_rejected() {
    assert_eq!(
        prepare(|_| {
            Ok(ScopeValue::object([
                ("list", ScopeValue::tool("github_list_issues")),
                ("list", ScopeValue::tool("github_update_issue")),
            ]))
        })
        .expect_err("duplicate"),
        "code mode namespace `github-issues`: duplicate key at `Issues.list`."
    );
}

#[test]
fn callables_inside_arrays_are_rejected() {
    assert_eq!(
        prepare(|_| {
            Ok(ScopeValue::object([(
                "handlers",
                ScopeValue::array([
                    ScopeValue::from(1_i64),
                    ScopeValue::object([("run", ScopeValue::tool("github_list_issues"))]),
                ]),
            )]))
        })
        .expect_err("in array"),
        "code mode namespace `github-issues`: the namespace tool at `Issues.handlers.1.run` is inside an array; put callables in objects."
    );
}

// Checklist: "namespace calls run through catalog tools and return JSON-safe details".
// At this layer: a call resolves to an exact catalog id with a JSON input, and
// scope data crosses verbatim as JSON (the executor and the bridge are core's).
#[test]
fn values_and_inputs_are_json_safe() {
    let runtime = prepare(|_| {
        Ok(ScopeValue::object([
            (
                "data",
                ScopeValue::from(json!({
                    "__proto__": { "polluted": true },
                    "unicode": "ñandú \u{1F980} \u{0}",
                    "big": u64::MAX,
                    "float": 0.1,
                    "nested": [[[{}]]],
                })),
            ),
            ("nan", ScopeValue::from(f64::NAN)),
            ("inf", ScopeValue::from(f64::INFINITY)),
            ("list", ScopeValue::tool("github_list_issues")),
        ]))
    })
    .expect("serializes");
    let namespace = &runtime.namespaces()[0];
    let value_at = |name: &str| {
        namespace
            .values
            .iter()
            .find(|(path, _)| path == &[name.to_owned()])
            .map(|(_, value)| value.clone())
            .expect("present")
    };
    // Data inside JSON values passes verbatim, `__proto__` included (it is a
    // data key there, and the sandbox installs JSON as own properties).
    assert_eq!(value_at("data")["__proto__"], json!({ "polluted": true }));
    assert_eq!(value_at("data")["big"], json!(u64::MAX));
    assert_eq!(value_at("nan"), Value::Null);
    assert_eq!(value_at("inf"), Value::Null);
    // The whole descriptor and every input survive a JSON round trip unchanged.
    let text = serde_json::to_string(namespace).expect("serializable");
    let back: Value = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, serde_json::to_value(namespace).expect("serializable"));

    let args = [json!({ "state": "open", "labels": ["a", "b"], "limit": 5 })];
    let target = runtime
        .dispatch("github-issues", "list", &args, false)
        .expect("callable");
    assert_eq!(target.catalog_id, LIST_ID);
    let round_trip: Value = serde_json::from_str(&target.input.to_string()).expect("input is JSON");
    assert_eq!(round_trip, args[0]);
}

#[test]
fn default_and_custom_input_mapping() {
    let runtime = prepare(|_| {
        Ok(ScopeValue::object([
            ("list", ScopeValue::tool("github_list_issues")),
            (
                "update",
                NamespaceTool::new("github_update_issue")
                    .with_mapper(|args| match args {
                        [Value::Number(number), patch, ..] => {
                            Ok(json!({ "number": number, "patch": patch }))
                        }
                        _ => Err("expected (number, patch)".to_owned()),
                    })
                    .into(),
            ),
            (
                "fragile",
                NamespaceTool::new("github_update_issue")
                    .with_mapper(|args| Ok(args[3].clone()))
                    .into(),
            ),
        ]))
    })
    .expect("serializes");
    let input = |path: &str, args: &[Value]| {
        runtime
            .dispatch("github-issues", path, args, false)
            .map(|target| target.input)
            .map_err(|error| error.to_string())
    };
    assert_eq!(input("list", &[]), Ok(json!({})));
    assert_eq!(input("list", &[Value::Null]), Ok(json!({})));
    assert_eq!(input("list", &[json!("raw"), json!(2)]), Ok(json!("raw")));
    assert_eq!(
        input("update", &[json!(7), json!({ "state": "closed" })]),
        Ok(json!({ "number": 7, "patch": { "state": "closed" } }))
    );
    assert_eq!(
        input("update", &[json!("seven")]),
        Err("code mode namespace `github-issues`: invalid arguments for `Issues.update`: expected (number, patch)".to_owned())
    );
    // A mapper that indexes guest arguments and panics does not take the host down.
    let panicked = input("fragile", &[]).expect_err("panicked");
    assert!(
        panicked.starts_with(
            "code mode namespace `github-issues`: invalid arguments for `Issues.fragile`: the input mapper panicked"
        ),
        "{panicked}"
    );
}

#[test]
fn scope_limits_stop_deep_and_exploding_scopes() {
    // Deep nesting of scope objects.
    let registry = NamespaceRegistry::new().with_limits(ScopeLimits::new().with_max_depth(8));
    registry
        .register_for_plugin(
            "github",
            issues(|_| {
                let mut value = ScopeValue::tool("github_list_issues");
                for _ in 0..20 {
                    value = ScopeValue::object([("next", value)]);
                }
                Ok(value)
            }),
        )
        .expect("valid");
    let error = registry
        .prepare_run(github_catalog(), &ctx())
        .expect_err("too deep");
    assert!(
        matches!(error, NamespaceError::ScopeTooDeep { limit: 8, .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("nests deeper than 8 levels at `Issues.next.next"),
        "{error}"
    );

    // Deep JSON inside a value counts too.
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let error = prepare(move |_| {
        Ok(ScopeValue::object([(
            "deep",
            ScopeValue::from(deep.clone()),
        )]))
    })
    .expect_err("too deep");
    assert_eq!(
        error,
        "code mode namespace `github-issues`: the scope nests deeper than 64 levels at `Issues.deep`."
    );

    // Shared sub-objects doubling at each level would expand to 2^25 values
    // (the depth, 2 per level, stays under the limit).
    let error = prepare(|_| {
        let mut shared = Arc::new(ScopeValue::from(1_i64));
        for _ in 0..25 {
            shared = Arc::new(ScopeValue::object([
                ("left", ScopeValue::Shared(Arc::clone(&shared))),
                ("right", ScopeValue::Shared(Arc::clone(&shared))),
            ]));
        }
        Ok(ScopeValue::object([("tree", ScopeValue::Shared(shared))]))
    })
    .expect_err("too large");
    assert_eq!(
        error,
        "code mode namespace `github-issues`: the scope has more than 50000 values once shared objects are expanded."
    );

    // A long chain of Shared indirections is bounded by depth too.
    let error = prepare(|_| {
        let mut value = ScopeValue::tool("github_list_issues");
        for _ in 0..1_000 {
            value = ScopeValue::Shared(Arc::new(value));
        }
        Ok(ScopeValue::object([("list", value)]))
    });
    assert!(
        error
            .expect_err("too deep")
            .contains("nests deeper than 64 levels at `Issues.list`")
    );
}

#[test]
fn limits_are_clamped_to_sane_bounds() {
    let limits = ScopeLimits::new()
        .with_max_depth(usize::MAX)
        .with_max_nodes(0);
    assert_eq!(
        limits.max_depth(),
        codemode_namespaces::MAX_SCOPE_DEPTH_CEILING
    );
    assert_eq!(limits.max_nodes(), 1);
    assert_eq!(ScopeLimits::new().with_max_depth(0).max_depth(), 1);
}

// Checklist: "plugin rollback clears the namespace registrations it owns".
#[test]
fn plugin_rollback_clears_only_its_registrations() {
    let registry = registry_with(issues(seed_scope));
    registry
        .register_for_plugin(
            "github",
            Registration::new("github-pulls", "Pulls", |_| {
                Ok(ScopeValue::object([(
                    "list",
                    ScopeValue::tool("github_list_issues"),
                )]))
            })
            .with_required_tools(["github_list_issues"]),
        )
        .expect("valid");
    registry
        .register_for_plugin("cal", named("calendar", "Calendar"))
        .expect("valid");
    assert_eq!(
        registry.ids_for_plugin("github"),
        vec!["github-issues", "github-pulls"]
    );
    assert_eq!(registry.len(), 3);

    assert_eq!(registry.clear_for_plugin("github"), 2);
    assert!(registry.ids_for_plugin("github").is_empty());
    assert_eq!(registry.ids_for_plugin("cal"), vec!["calendar"]);
    // No stale globals survive: the next run does not see them, even with the tools present.
    let runtime = registry
        .prepare_run(github_catalog(), &ctx())
        .expect("prepared");
    assert!(runtime.is_empty());
    assert_eq!(runtime.prompt_text(), None);
    // Clearing again or clearing an unknown plugin is a no-op.
    assert_eq!(registry.clear_for_plugin("github"), 0);
    assert_eq!(registry.clear_for_plugin("nobody"), 0);
    // The id and global name are free again.
    registry
        .register_for_plugin("github", issues(seed_scope))
        .expect("re-register after rollback");
    assert!(
        !registry
            .prepare_run(github_catalog(), &ctx())
            .expect("visible")
            .is_empty()
    );

    registry.clear_all();
    assert!(registry.is_empty());
}

static SHARED_REGISTRY: NamespaceRegistry = NamespaceRegistry::new();

#[test]
fn create_scope_may_use_the_registry_without_deadlocking() {
    SHARED_REGISTRY
        .register_for_plugin(
            "github",
            issues(|_| {
                Ok(ScopeValue::object([(
                    "registered",
                    ScopeValue::from(SHARED_REGISTRY.len() as i64),
                )]))
            }),
        )
        .expect("valid");
    let runtime = SHARED_REGISTRY
        .prepare_run(github_catalog(), &ctx())
        .expect("visible");
    assert_eq!(
        runtime.namespaces()[0].values,
        vec![(vec!["registered".to_owned()], json!(1))]
    );
    SHARED_REGISTRY.clear_all();
}

#[test]
fn the_global_registry_is_one_instance() {
    let registry = NamespaceRegistry::global();
    assert!(std::ptr::eq(registry, NamespaceRegistry::global()));
    // Use a plugin id no other test uses, and clean up.
    registry
        .register_for_plugin("global-test-plugin", named("global-test", "GlobalTest"))
        .expect("valid");
    assert_eq!(
        NamespaceRegistry::global().ids_for_plugin("global-test-plugin"),
        vec!["global-test"]
    );
    assert_eq!(registry.clear_for_plugin("global-test-plugin"), 1);
}

#[test]
fn runtime_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<NamespaceRuntime>();
    assert_send_sync::<NamespaceRegistry>();
    let runtime = prepare(seed_scope).expect("visible");
    let handles: Vec<_> = (0..4)
        .map(|n| {
            let runtime = runtime.clone();
            std::thread::spawn(move || {
                runtime
                    .dispatch("github-issues", "update", &[json!(n), json!({})], false)
                    .map(|target| target.input)
            })
        })
        .collect();
    for (n, handle) in handles.into_iter().enumerate() {
        let input = handle.join().expect("no panic").expect("callable");
        assert_eq!(input, json!({ "number": n, "patch": {} }));
    }
}

/// A namespace that can never be visible says why, instead of silently missing: at
/// registration for the `core` owner, at preparation for tools owned by someone else.
#[test]
fn namespaces_that_are_never_visible_say_why() {
    use codemode_namespaces::{HiddenNamespace, HiddenReason};
    let registry = NamespaceRegistry::new();
    let over_core = Registration::new("core-messages", "Messages", |_| {
        Ok(ScopeValue::object([(
            "send",
            NamespaceTool::new("message").into(),
        )]))
    })
    .with_required_tools(["message"]);
    let error = registry
        .register_for_plugin("core", over_core.clone())
        .unwrap_err();
    assert_eq!(
        error,
        NamespaceError::CorePluginId {
            id: "core-messages".into()
        }
    );
    assert!(
        error
            .to_string()
            .contains("core tools never make a namespace visible")
    );
    assert!(registry.is_empty());

    // Registered for a plugin that does not own `message` (a core tool here).
    registry.register_for_plugin("chat", over_core).unwrap();
    registry
        .register_for_plugin("github", issues(seed_scope))
        .unwrap();
    let wiki = Registration::new("wiki", "Wiki", |_| {
        Ok(ScopeValue::object([(
            "read",
            NamespaceTool::new("wiki_read").into(),
        )]))
    })
    .with_required_tools(["wiki_read"]);
    registry.register_for_plugin("wiki", wiki).unwrap();
    let runtime = registry.prepare_run(github_catalog(), &ctx()).unwrap();
    assert_eq!(runtime.namespaces().len(), 1);
    assert_eq!(
        runtime.hidden(),
        [
            HiddenNamespace {
                id: "core-messages".into(),
                global_name: "Messages".into(),
                plugin_id: "chat".into(),
                reason: HiddenReason::NotOwned {
                    tool: "message".into(),
                    owner: "core".into()
                },
            },
            HiddenNamespace {
                id: "wiki".into(),
                global_name: "Wiki".into(),
                plugin_id: "wiki".into(),
                reason: HiddenReason::MissingTool {
                    tool: "wiki_read".into()
                },
            },
        ]
    );
    assert_eq!(
        runtime.hidden()[0].to_string(),
        "code mode namespace `core-messages` of plugin `chat` is hidden: its required tool `message` comes from core, not from plugin `chat`; only a plugin's own tools make its namespaces visible."
    );
    // An MCP server named like the plugin is named as what it is.
    let mcp = [
        CatalogTool::new("mcp:github:github_list_issues", "github_list_issues")
            .with_owner(ToolOwner::McpServer("github")),
    ];
    let runtime = registry.prepare_run(mcp, &ctx()).unwrap();
    let github = runtime
        .hidden()
        .iter()
        .find(|h| h.id == "github-issues")
        .unwrap();
    assert_eq!(
        github.reason,
        HiddenReason::NotOwned {
            tool: "github_list_issues".into(),
            owner: "MCP server `github`".into()
        }
    );
}
