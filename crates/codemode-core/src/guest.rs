//! The guest globals (`ALL_TOOLS`, `tools`, `MCP`, `API`, `results`, namespaces), built from the run catalog, the MCP declarations and the
//! visible namespaces, as a plain sandbox [`GuestSetup`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use codemode_catalog::McpCapability;
use codemode_namespaces::NamespaceRuntime;
use codemode_sandbox::{Callable, GuestPath, GuestSetup, LocalFn};
use serde_json::Value;

use crate::guest_dts;
use crate::state::{Counters, MCP_CALL, MCP_CAPABILITY, NAMESPACE_CALL, SessionState, TOOLS_CALL};

fn path(parts: &[&str]) -> GuestPath {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

fn bridge(method: &str, bound_args: Vec<Value>) -> Callable {
    Callable::Bridge {
        method: method.to_owned(),
        bound_args,
    }
}

fn local(f: impl Fn(Vec<Value>) -> Result<Value, String> + Send + Sync + 'static) -> Callable {
    let f: LocalFn = Arc::new(f);
    Callable::Local(f)
}

/// The guest setup of one code-mode run. `counters` receive the search/describe counts.
pub(crate) fn setup(session: &SessionState, counters: &Arc<Counters>) -> GuestSetup {
    let mut setup = GuestSetup::default();
    let catalog = &session.catalog;
    setup
        .json_values
        .push((path(&["ALL_TOOLS"]), session.all_tools.clone()));

    let search = {
        let (catalog, counters, limits) = (
            Arc::clone(catalog),
            Arc::clone(counters),
            session.search_limits,
        );
        local(move |args| {
            counters.search.fetch_add(1, Ordering::Relaxed);
            let query = match args.first() {
                Some(Value::String(query)) => query.as_str(),
                None | Some(Value::Null) => "",
                Some(_) => return Err("tools.search query must be a string.".into()),
            };
            let limit = args.get(1).and_then(|options| options.get("limit"));
            let hits = catalog
                .search(query, limit, limits)
                .map_err(|e| e.to_string())?;
            Ok(Value::Array(
                hits.into_iter().map(|entry| entry.compact_json()).collect(),
            ))
        })
    };
    let describe = {
        let (catalog, counters) = (Arc::clone(catalog), Arc::clone(counters));
        local(move |args| {
            counters.describe.fetch_add(1, Ordering::Relaxed);
            let id = args
                .first()
                .and_then(Value::as_str)
                .ok_or("tools.describe needs a tool id string.")?;
            Ok(catalog
                .lookup(id)
                .map_err(|e| e.to_string())?
                .describe_json())
        })
    };
    setup.callables.push((path(&["tools", "search"]), search));
    setup
        .callables
        .push((path(&["tools", "describe"]), describe));
    setup
        .callables
        .push((path(&["tools", "call"]), bridge(TOOLS_CALL, Vec::new())));
    for (name, id) in catalog.convenience_names() {
        setup.callables.push((
            path(&["tools", name]),
            bridge(TOOLS_CALL, vec![Value::String(id.to_owned())]),
        ));
    }

    let decls = session.mcp.clone();
    if let Some(decls) = &decls {
        for server in decls.servers() {
            for tool in &server.tools {
                let target = path(&["MCP", &server.ident, &tool.ident]);
                setup.callables.push((
                    target,
                    bridge(MCP_CALL, vec![Value::String(tool.catalog_id.clone())]),
                ));
            }
            let api = {
                let (decls, ident) = (Arc::clone(decls), server.ident.clone());
                local(move |args| {
                    let tool = args.first().and_then(Value::as_str);
                    let schema = args
                        .get(1)
                        .and_then(|o| o.get("schema"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    decls.api(&ident, tool, schema).map_err(|e| e.to_string())
                })
            };
            setup
                .callables
                .push((path(&["MCP", &server.ident, "$api"]), api));
            for capability in McpCapability::ALL {
                let (offered, group) = if capability.is_resources() {
                    (server.has_resources, "resources")
                } else {
                    (server.has_prompts, "prompts")
                };
                if !offered {
                    continue;
                }
                // `resources/list` -> `MCP.<server>.resources.list`.
                let verb = capability.method().rsplit('/').next().unwrap_or_default();
                let target = path(&["MCP", &server.ident, group, verb]);
                let id = Value::String(capability.id(&server.name));
                setup
                    .callables
                    .push((target, bridge(MCP_CAPABILITY, vec![id])));
            }
        }
    } else {
        setup
            .values
            .push((path(&["MCP"]), Value::Object(Default::default())));
    }
    // The runtime's own declarations, with this catalog's host source name.
    let guest_text = guest_dts::text(catalog.host_source().as_str());
    let guest_bytes = guest_text.len();
    let list = {
        let decls = decls.clone();
        local(move |args| {
            let prefix = match args.first() {
                None | Some(Value::Null) => None,
                Some(Value::String(prefix)) => Some(prefix.as_str()),
                Some(_) => return Err("API.list prefix must be a string.".into()),
            };
            let guest_row = serde_json::json!({
                "path": guest_dts::PATH,
                "description": guest_dts::DESCRIPTION,
                "bytes": guest_bytes,
            });
            let mut rows = match (&decls, prefix) {
                (_, Some(prefix)) if prefix.trim_end_matches('/') == "guest" => {
                    return Ok(Value::Array(vec![guest_row]));
                }
                (Some(decls), _) => {
                    serde_json::to_value(decls.list(prefix).map_err(|e| e.to_string())?)
                        .map_err(|e| e.to_string())?
                }
                (None, None) => Value::Array(Vec::new()),
                (None, Some(prefix)) => return Err(format!("Unknown API path: {prefix}")),
            };
            if prefix.is_none()
                && let Value::Array(rows) = &mut rows
            {
                rows.push(guest_row);
            }
            Ok(rows)
        })
    };
    let read = local(move |args| {
        let file = args
            .first()
            .and_then(Value::as_str)
            .ok_or("API.read needs a path string.")?;
        if file == guest_dts::PATH {
            return Ok(Value::String(guest_text.clone()));
        }
        match &decls {
            Some(decls) => decls
                .read(file)
                .map(|text| Value::String(text.to_owned()))
                .map_err(|e| e.to_string()),
            None => Err(format!("Unknown API path: {file}")),
        }
    });
    setup.callables.push((path(&["API", "list"]), list));
    setup.callables.push((path(&["API", "read"]), read));

    let saved = |verb: fn(&crate::results::SavedResults, Vec<Value>) -> Result<Value, String>| {
        let results = Arc::clone(&session.results);
        local(move |args| verb(&results, args))
    };
    setup
        .callables
        .push((path(&["results", "save"]), saved(|r, args| r.save(args))));
    setup
        .callables
        .push((path(&["results", "load"]), saved(|r, args| r.load(&args))));
    setup.callables.push((
        path(&["results", "delete"]),
        saved(|r, args| r.delete(&args)),
    ));
    setup
        .callables
        .push((path(&["results", "list"]), saved(|r, _| Ok(r.list()))));

    install_namespaces(&mut setup, &session.namespaces);
    setup.freeze = ["ALL_TOOLS", "tools", "MCP", "API", "namespaces", "results"]
        .map(String::from)
        .to_vec();
    setup.freeze.extend(
        session
            .namespaces
            .namespaces()
            .iter()
            .map(|ns| ns.global_name.clone()),
    );
    setup
}

/// Each visible namespace as a direct global and, by alias, as `namespaces.<globalName>`.
fn install_namespaces(setup: &mut GuestSetup, runtime: &NamespaceRuntime) {
    setup
        .values
        .push((path(&["namespaces"]), Value::Object(Default::default())));
    for namespace in runtime.namespaces() {
        let root = vec![namespace.global_name.clone()];
        setup
            .values
            .push((root.clone(), Value::Object(Default::default())));
        for (relative, value) in &namespace.values {
            setup
                .values
                .push(([root.clone(), relative.clone()].concat(), value.clone()));
        }
        for relative in &namespace.callables {
            let bound = vec![
                Value::String(namespace.id.clone()),
                Value::String(NamespaceRuntime::path_key(relative)),
            ];
            setup.callables.push((
                [root.clone(), relative.clone()].concat(),
                bridge(NAMESPACE_CALL, bound),
            ));
        }
        setup
            .aliases
            .push((path(&["namespaces", &namespace.global_name]), root));
    }
}
