//! `codemode-mcp-test-server`: a tiny MCP server over stdio, written with
//! rmcp, for the cases the npm reference servers cannot produce. Used by the
//! `codemode-mcp` tests and by the workspace's end-to-end plan.
//!
//! It lives here, as a binary of `codemode-mcp` behind the default
//! `test-server` feature, because Cargo only hands integration tests the path
//! of binaries of the same package (`CARGO_BIN_EXE_*`); the library itself
//! contains no server code. Build it for other uses with
//! `cargo build -p codemode-mcp --bin codemode-mcp-test-server`.
//!
//! Tools (listed three per page, so clients must follow `nextCursor`):
//! - `echo {text}`: returns the text (content and `structuredContent`).
//! - `lookup {key}`: read-only (`readOnlyHint: true`) fixed table lookup.
//! - `delayed_echo {text, ms}`: answers after `ms` milliseconds.
//! - `crash {}`: exits the process in the middle of the call.
//! - `slow_forever {}`: never answers.
//! - `fail {message}`: returns a tool error (`isError: true`).
//! - `env {name}`: returns the value of an environment variable.
//! - `malformed {}`: answers with a response whose `content` is not an array.
//!
//! One resource (`test://greeting`) and one prompt (`greet {name}`).
//!
//! Flags change the whole server for hostile-start tests:
//! `--exit-before-handshake`, `--never-answer` (reads nothing, says nothing),
//! `--grow` (adds a `grow {}` tool: calling it adds the tool `grown` and sends
//! `notifications/tools/list_changed` before answering),
//! `--hostile-tools` (adds tools with empty, huge, control-character,
//! duplicate names and a too-deep schema), `--endless-pages` (every tools page
//! has a `nextCursor`), `--capability-named-tools` (adds the tools
//! `resources/list` and `prompts/get`, which answer `{ "tool": <name> }`:
//! tools that merely have the names of MCP methods).
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stderr,
    reason = "a server binary: its stderr lines are what the crash and start-failure tests read back"
)]

use std::io::Write as _;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

/// Tools per `tools/list` page.
const PAGE_SIZE: usize = 3;

/// Set by the `grow` tool (one server per process).
static GROWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Exit status of the `crash` tool.
const CRASH_EXIT_CODE: i32 = 70;

#[derive(Debug, Clone, Copy, Default)]
struct Behaviour {
    hostile_tools: bool,
    endless_pages: bool,
    capability_named_tools: bool,
    grow: bool,
}

/// The tools of `--capability-named-tools`.
const CAPABILITY_NAMED_TOOLS: [&str; 2] = ["resources/list", "prompts/get"];

#[derive(Debug, Clone, Copy)]
struct TestServer {
    behaviour: Behaviour,
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

fn tool_list(behaviour: Behaviour) -> Vec<Value> {
    let mut tools = vec![
        json!({
            "name": "echo",
            "description": "Returns its text.",
            "inputSchema": object_schema(json!({ "text": { "type": "string" } }), &["text"]),
        }),
        json!({
            "name": "lookup",
            "title": "Lookup",
            "description": "Looks a key up in a fixed table (answer, colour).",
            "inputSchema": object_schema(json!({ "key": { "type": "string" } }), &["key"]),
            "annotations": { "readOnlyHint": true },
        }),
        json!({
            "name": "delayed_echo",
            "description": "Returns its text after `ms` milliseconds.",
            "inputSchema": object_schema(
                json!({ "text": { "type": "string" }, "ms": { "type": "integer", "minimum": 0 } }),
                &["text", "ms"],
            ),
            "annotations": { "readOnlyHint": true },
        }),
        json!({
            "name": "crash",
            "description": "Exits the server process in the middle of the call.",
            "inputSchema": object_schema(json!({}), &[]),
        }),
        json!({
            "name": "slow_forever",
            "description": "Never answers.",
            "inputSchema": object_schema(json!({}), &[]),
        }),
        json!({
            "name": "fail",
            "description": "Returns a tool error with the message.",
            "inputSchema": object_schema(json!({ "message": { "type": "string" } }), &["message"]),
        }),
        json!({
            "name": "env",
            "description": "Returns the value of an environment variable of the server.",
            "inputSchema": object_schema(json!({ "name": { "type": "string" } }), &["name"]),
            "annotations": { "readOnlyHint": true },
        }),
        json!({
            "name": "malformed",
            "description": "Answers with a malformed result.",
            "inputSchema": object_schema(json!({}), &[]),
        }),
    ];
    if behaviour.capability_named_tools {
        tools.extend(CAPABILITY_NAMED_TOOLS.map(|name| {
            json!({
                "name": name,
                "description": "A tool named like an MCP method.",
                "inputSchema": object_schema(json!({}), &[]),
            })
        }));
    }
    if behaviour.grow {
        tools.push(json!({
            "name": "grow",
            "description": "Adds the tool `grown` and announces the change.",
            "inputSchema": object_schema(json!({}), &[]),
        }));
        if GROWN.load(std::sync::atomic::Ordering::Relaxed) {
            tools.push(json!({
                "name": "grown",
                "description": "Exists once `grow` was called.",
                "inputSchema": object_schema(json!({}), &[]),
            }));
        }
    }
    if behaviour.hostile_tools {
        let mut deep = json!({ "type": "string" });
        for _ in 0..40 {
            deep = json!({ "type": "object", "properties": { "d": deep } });
        }
        tools.extend([
            json!({ "name": "", "inputSchema": object_schema(json!({}), &[]) }),
            json!({ "name": "x".repeat(10_000), "inputSchema": object_schema(json!({}), &[]) }),
            json!({ "name": "bad\u{0}name", "inputSchema": object_schema(json!({}), &[]) }),
            json!({ "name": "echo", "description": "A second echo.", "inputSchema": object_schema(json!({}), &[]) }),
            json!({ "name": "deep", "inputSchema": deep }),
            json!({
                "name": "wordy",
                "description": "word ".repeat(100_000),
                "inputSchema": object_schema(json!({}), &[]),
            }),
        ]);
    }
    tools
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

fn text_result(
    text: &str,
    structured: Option<Value>,
    is_error: bool,
) -> Result<CallToolResult, ErrorData> {
    let mut result = json!({
        "content": [{ "type": "text", "text": text }],
        "isError": is_error,
    });
    if let (Some(structured), Some(object)) = (structured, result.as_object_mut()) {
        object.insert("structuredContent".to_owned(), structured);
    }
    serde_json::from_value(result).map_err(internal)
}

fn string_argument(request: &CallToolRequestParams, key: &str) -> Result<String, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorData::invalid_params(format!("missing string argument `{key}`"), None))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new(
            "codemode-mcp-test-server",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start = request
            .and_then(|request| request.cursor)
            .map(|cursor| cursor.parse::<usize>().map_err(internal))
            .transpose()?
            .unwrap_or(0);
        let tools = tool_list(self.behaviour);
        let end = start.saturating_add(PAGE_SIZE).min(tools.len());
        let page: Vec<Value> = tools.get(start.min(end)..end).unwrap_or_default().to_vec();
        let next = if self.behaviour.endless_pages {
            // A fresh cursor every time, so only a page limit stops a client.
            Some(start.saturating_add(PAGE_SIZE).to_string())
        } else if end < tools.len() {
            Some(end.to_string())
        } else {
            None
        };
        serde_json::from_value(json!({ "tools": page, "nextCursor": next })).map_err(internal)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = string_argument(&request, "text")?;
                text_result(&text, Some(json!({ "text": text })), false)?
            }
            "lookup" => {
                let key = string_argument(&request, "key")?;
                match key.as_str() {
                    "answer" => text_result("42", Some(json!({ "key": key, "value": 42 })), false)?,
                    "colour" => {
                        text_result("blue", Some(json!({ "key": key, "value": "blue" })), false)?
                    }
                    _ => text_result(&format!("no such key: {key}"), None, true)?,
                }
            }
            "delayed_echo" => {
                let text = string_argument(&request, "text")?;
                let ms = request
                    .arguments
                    .as_ref()
                    .and_then(|arguments| arguments.get("ms"))
                    .and_then(Value::as_u64)
                    .ok_or_else(|| {
                        ErrorData::invalid_params("missing integer argument `ms`", None)
                    })?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text_result(&text, Some(json!({ "text": text, "ms": ms })), false)?
            }
            "crash" => {
                // The path stands for the host details a real server's last
                // words carry (its install directory, a stack trace): they
                // must reach the host's log but never the guest.
                let exe = std::env::current_exe().unwrap_or_default();
                eprintln!(
                    "codemode-mcp-test-server: crashing on purpose ({})",
                    exe.display()
                );
                std::process::exit(CRASH_EXIT_CODE);
            }
            "slow_forever" => std::future::pending().await,
            "fail" => {
                let message = string_argument(&request, "message")?;
                text_result(&message, None, true)?
            }
            "env" => {
                let name = string_argument(&request, "name")?;
                let value = std::env::var(&name).ok();
                text_result(
                    value.as_deref().unwrap_or(""),
                    Some(json!({ "name": name, "value": value })),
                    false,
                )?
            }
            "grow" if self.behaviour.grow => {
                GROWN.store(true, std::sync::atomic::Ordering::Relaxed);
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(internal)?;
                text_result("grown", None, false)?
            }
            "grown" if self.behaviour.grow => text_result("here", None, false)?,
            "malformed" => {
                // Answer behind rmcp's back with a result that is not a valid
                // CallToolResult, then never let rmcp answer.
                let line = json!({
                    "jsonrpc": "2.0",
                    "id": context.id,
                    "result": { "content": "not an array", "isError": "maybe" },
                });
                {
                    let mut stdout = std::io::stdout().lock();
                    writeln!(stdout, "{line}").map_err(internal)?;
                    stdout.flush().map_err(internal)?;
                }
                std::future::pending().await
            }
            name if self.behaviour.capability_named_tools
                && CAPABILITY_NAMED_TOOLS.contains(&name) =>
            {
                text_result(name, Some(json!({ "tool": name })), false)?
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        serde_json::from_value(json!({
            "resources": [{ "uri": "test://greeting", "name": "greeting", "mimeType": "text/plain" }],
        }))
        .map_err(internal)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "test://greeting" {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        let result: ReadResourceResult = serde_json::from_value(json!({
            "contents": [{ "uri": "test://greeting", "mimeType": "text/plain", "text": "hello from the test server" }],
        }))
        .map_err(internal)?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        serde_json::from_value(json!({
            "prompts": [{
                "name": "greet",
                "description": "Asks to greet someone.",
                "arguments": [{ "name": "name", "required": true }],
            }],
        }))
        .map_err(internal)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "greet" {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let name = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("world");
        let result: GetPromptResult = serde_json::from_value(json!({
            "description": "A greeting",
            "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Say hello to {name}.") } }],
        }))
        .map_err(internal)?;
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut behaviour = Behaviour::default();
    for argument in std::env::args().skip(1) {
        match argument.as_str() {
            "--exit-before-handshake" => {
                eprintln!("codemode-mcp-test-server: exiting before the handshake as asked");
                std::process::exit(3);
            }
            "--never-answer" => std::future::pending::<()>().await,
            "--hostile-tools" => behaviour.hostile_tools = true,
            "--endless-pages" => behaviour.endless_pages = true,
            "--capability-named-tools" => behaviour.capability_named_tools = true,
            "--grow" => behaviour.grow = true,
            other => return Err(format!("unknown flag: {other}").into()),
        }
    }
    let running = TestServer { behaviour }
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    Ok(())
}
