//! The guest globals (`ALL_TOOLS`, `tools`, `MCP`, `API`, `results`, namespaces), built once per session from the run catalog, the MCP
//! declarations and the visible namespaces as a plain sandbox [`GuestSetup`], and the answers to
//! its synchronous calls (`tools.search`, `tools.describe`, `API.*`, `MCP.<server>.$api`,
//! `results.*`), which [`RunHost`](crate::bridge::RunHost) gives through
//! [`answer_sync`].

use codemode_catalog::{Catalog, McpCapability};
use codemode_mcp_decls::McpDecls;
use codemode_namespaces::NamespaceRuntime;
use codemode_sandbox::{BridgeRequest, Callable, GuestPath, GuestSetup, JsonText};
use serde_json::Value;

use crate::guest_dts;
use crate::state::{
    API_LIST, API_READ, Counters, MCP_API, MCP_CALL, MCP_CAPABILITY, NAMESPACE_CALL,
    RESULTS_DELETE, RESULTS_LIST, RESULTS_LOAD, RESULTS_SAVE, SessionState, TOOLS_CALL,
    TOOLS_DESCRIBE, TOOLS_SEARCH,
};

fn path(parts: &[&str]) -> GuestPath {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

fn bridge(method: &str, bound_args: Vec<Value>) -> Callable {
    Callable::Bridge {
        method: method.to_owned(),
        bound_args,
    }
}

fn sync(method: &str, bound_args: Vec<Value>) -> Callable {
    Callable::Sync {
        method: method.to_owned(),
        bound_args,
    }
}

/// The guest setup of every run of a session: made once at activation and prepared by the
/// caller, so a run's cost does not grow with the catalog. It holds data only; the synchronous
/// calls are answered per run by [`answer_sync`].
pub(crate) fn setup(
    catalog: &Catalog,
    all_tools: JsonText,
    mcp: Option<&McpDecls>,
    namespaces: &NamespaceRuntime,
) -> GuestSetup {
    let mut setup = GuestSetup::default();
    setup.json_values.push((path(&["ALL_TOOLS"]), all_tools));
    setup
        .callables
        .push((path(&["tools", "search"]), sync(TOOLS_SEARCH, Vec::new())));
    setup.callables.push((
        path(&["tools", "describe"]),
        sync(TOOLS_DESCRIBE, Vec::new()),
    ));
    setup
        .callables
        .push((path(&["tools", "call"]), bridge(TOOLS_CALL, Vec::new())));
    for (name, id) in catalog.convenience_names() {
        setup.callables.push((
            path(&["tools", name]),
            bridge(TOOLS_CALL, vec![Value::String(id.to_owned())]),
        ));
    }

    if let Some(decls) = mcp {
        for server in decls.servers() {
            for tool in &server.tools {
                let target = path(&["MCP", &server.ident, &tool.ident]);
                setup.callables.push((
                    target,
                    bridge(MCP_CALL, vec![Value::String(tool.catalog_id.clone())]),
                ));
            }
            setup.callables.push((
                path(&["MCP", &server.ident, "$api"]),
                sync(MCP_API, vec![Value::String(server.ident.clone())]),
            ));
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
    setup
        .callables
        .push((path(&["API", "list"]), sync(API_LIST, Vec::new())));
    setup
        .callables
        .push((path(&["API", "read"]), sync(API_READ, Vec::new())));
    for (verb, method) in [
        ("save", RESULTS_SAVE),
        ("load", RESULTS_LOAD),
        ("delete", RESULTS_DELETE),
        ("list", RESULTS_LIST),
    ] {
        setup
            .callables
            .push((path(&["results", verb]), sync(method, Vec::new())));
    }

    install_namespaces(&mut setup, namespaces);
    setup.freeze = ["ALL_TOOLS", "tools", "MCP", "API", "namespaces", "results"]
        .map(String::from)
        .to_vec();
    setup.freeze.extend(
        namespaces
            .namespaces()
            .iter()
            .map(|ns| ns.global_name.clone()),
    );
    setup
}

/// Answers one synchronous guest call of a run: `request.args` are the bound arguments followed
/// by the guest's. `counters` receive the search/describe counts of the run.
pub(crate) fn answer_sync(
    session: &SessionState,
    counters: &Counters,
    request: BridgeRequest,
) -> Result<Value, String> {
    use std::sync::atomic::Ordering;
    let args = request.args;
    match request.method.as_str() {
        TOOLS_SEARCH => {
            counters.search.fetch_add(1, Ordering::Relaxed);
            let query = match args.first() {
                Some(Value::String(query)) => query.as_str(),
                None | Some(Value::Null) => "",
                Some(_) => return Err("tools.search query must be a string.".into()),
            };
            let limit = args.get(1).and_then(|options| options.get("limit"));
            let hits = session
                .catalog
                .search(query, limit, session.search_limits)
                .map_err(|e| e.to_string())?;
            Ok(Value::Array(
                hits.into_iter().map(|entry| entry.compact_json()).collect(),
            ))
        }
        TOOLS_DESCRIBE => {
            counters.describe.fetch_add(1, Ordering::Relaxed);
            let id = args
                .first()
                .and_then(Value::as_str)
                .ok_or("tools.describe needs a tool id string.")?;
            Ok(session
                .catalog
                .lookup(id)
                .map_err(|e| e.to_string())?
                .describe_json())
        }
        MCP_API => {
            let decls = session.mcp.as_deref().ok_or("unknown MCP server")?;
            let ident = args.first().and_then(Value::as_str).unwrap_or_default();
            let tool = args.get(1).and_then(Value::as_str);
            let schema = args
                .get(2)
                .and_then(|o| o.get("schema"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            decls.api(ident, tool, schema).map_err(|e| e.to_string())
        }
        API_LIST => api_list(
            session.mcp.as_deref(),
            args.first(),
            session.guest_dts.len(),
        ),
        API_READ => {
            let file = args
                .first()
                .and_then(Value::as_str)
                .ok_or("API.read needs a path string.")?;
            if file == guest_dts::PATH {
                return Ok(Value::String(session.guest_dts.to_string()));
            }
            match &session.mcp {
                Some(decls) => decls
                    .read(file)
                    .map(|text| Value::String(text.to_owned()))
                    .map_err(|e| e.to_string()),
                None => Err(format!("Unknown API path: {file}")),
            }
        }
        RESULTS_SAVE => session.results.save(args),
        RESULTS_LOAD => session.results.load(&args),
        RESULTS_DELETE => session.results.delete(&args),
        RESULTS_LIST => Ok(session.results.list()),
        other => Err(format!("unknown code mode function {other}")),
    }
}

/// `API.list(prefix?)`: the MCP declaration files under `prefix`, and the guest globals file.
fn api_list(
    decls: Option<&McpDecls>,
    prefix: Option<&Value>,
    guest_bytes: usize,
) -> Result<Value, String> {
    let prefix = match prefix {
        None | Some(Value::Null) => None,
        Some(Value::String(prefix)) => Some(prefix.as_str()),
        Some(_) => return Err("API.list prefix must be a string.".into()),
    };
    let guest_row = serde_json::json!({
        "path": guest_dts::PATH,
        "description": guest_dts::DESCRIPTION,
        "bytes": guest_bytes,
    });
    let mut rows = match (decls, prefix) {
        (_, Some(prefix)) if prefix.trim_end_matches('/') == "guest" => {
            return Ok(Value::Array(vec![guest_row]));
        }
        (Some(decls), _) => serde_json::to_value(decls.list(prefix).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?,
        (None, None) => Value::Array(Vec::new()),
        (None, Some(prefix)) => return Err(format!("Unknown API path: {prefix}")),
    };
    if prefix.is_none()
        && let Value::Array(rows) = &mut rows
    {
        rows.push(guest_row);
    }
    Ok(rows)
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
