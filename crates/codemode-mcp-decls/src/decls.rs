//! [`McpDecls`]: the binding table, call preparation, `$api` and the virtual files for a set of
//! MCP servers.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{name_list, quoted};
use crate::files::{ROOT, validate_path};
use crate::ident::{IdentKind, IdentScope};
use crate::jsdoc::{comment_line, comment_lines, truncate_chars, write_block};
use crate::schema::{
    MAX_SCHEMA_DEPTH_CAP, TypeWriter, bounded_copy, deep_clone, doc_facts, fill_defaults,
    follow_refs, literal, required_names,
};
use crate::{DeclError, DeclLimits, FileInfo, McpServer, VirtualFile};

/// Path of the root declaration file.
const INDEX_PATH: &str = "mcp/index.d.ts";

/// Characters of a server name quoted in comments and file descriptions.
const MAX_NAME_CHARS: usize = 100;

/// Characters of a `default` value shown in a `@param` line.
const MAX_DEFAULT_CHARS: usize = 80;

/// The declaration of `$api`, shared by every server file.
const API_DECL: &str = "  /** Returns this TypeScript-style API header; `toolName` narrows it to one tool, `{ schema: true }` adds the JSON Schemas. */\n  function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;\n";

/// Types shared by every server file, declared once in `mcp/index.d.ts`.
const INDEX_TYPES: &str = r#"/** Result of an MCP tool call; `structuredContent` follows the tool's output schema when it has one. */
type McpToolResult<T = unknown> = {
  content?: unknown[];
  structuredContent?: T;
  isError?: boolean;
  [key: string]: unknown;
};

/** What `MCP.<server>.$api(toolName?, { schema? })` returns. */
type McpApiHeader = {
  /** The server's identifier under `MCP`. */
  server: string;
  /** The server's MCP name. */
  name: string;
  /** TypeScript declarations of the server, or of the one tool asked for. */
  header: string;
  tools: {
    /** Identifier: call it as `MCP.<server>.<name>({ ... })`. */
    name: string;
    /** The tool's MCP name. */
    mcpName: string;
    description: string;
    /** JSON Schema of the input (only with `{ schema: true }`). */
    inputSchema?: unknown;
    /** JSON Schema of `structuredContent` (only with `{ schema: true }`, when declared). */
    outputSchema?: unknown;
  }[];
  resources: boolean;
  prompts: boolean;
};

/** Members every `MCP.<server>` namespace has. */
interface McpServerApi {
  /** Returns the server's TypeScript-style API header; `toolName` narrows it to one tool, `{ schema: true }` adds the JSON Schemas. */
  $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;
}

/** `MCP.<server>.resources.list()` result. */
type McpResourceList = {
  resources: { uri: string; name: string; title?: string; description?: string; mimeType?: string; [key: string]: unknown }[];
  nextCursor?: string;
  [key: string]: unknown;
};

/** `MCP.<server>.resources.read({ uri })` result. */
type McpResourceContents = {
  contents: { uri: string; mimeType?: string; text?: string; blob?: string; [key: string]: unknown }[];
  [key: string]: unknown;
};

/** `MCP.<server>.prompts.list()` result. */
type McpPromptList = {
  prompts: { name: string; title?: string; description?: string; arguments?: { name: string; description?: string; required?: boolean }[]; [key: string]: unknown }[];
  nextCursor?: string;
  [key: string]: unknown;
};

/** `MCP.<server>.prompts.get({ name, arguments })` result. */
type McpPrompt = {
  description?: string;
  messages: { role: "user" | "assistant"; content: unknown }[];
  [key: string]: unknown;
};
"#;

const RESOURCES_DECL: &str = r#"
  /** Resources this server offers. */
  namespace resources {
    /** Lists the server's resources (pass `cursor` from `nextCursor` for the next page). */
    function list(input?: { cursor?: string }): Promise<McpResourceList>;
    /** Reads one resource by URI. */
    function read(input: { uri: string }): Promise<McpResourceContents>;
  }
"#;

const PROMPTS_DECL: &str = r#"
  /** Prompts this server offers. */
  namespace prompts {
    /** Lists the server's prompts (pass `cursor` from `nextCursor` for the next page). */
    function list(input?: { cursor?: string }): Promise<McpPromptList>;
    /** Renders one prompt with its arguments. */
    function get(input: { name: string; arguments?: Record<string, string> }): Promise<McpPrompt>;
  }
"#;

/// One visible MCP server as the guest sees it: `MCP.<ident>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerBinding {
    /// The server's identifier under `MCP` (unique, camelCase).
    pub ident: String,
    /// The server's MCP name.
    pub name: String,
    /// The server's tools, in the server's order.
    pub tools: Vec<ToolBinding>,
    /// `MCP.<ident>.resources.list/read` exist.
    pub has_resources: bool,
    /// `MCP.<ident>.prompts.list/get` exist.
    pub has_prompts: bool,
}

/// One MCP tool as the guest sees it: `MCP.<server>.<ident>`, resolving to an exact catalog id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolBinding {
    /// The tool's identifier under `MCP.<server>` (unique in the server, camelCase).
    pub ident: String,
    /// The tool's MCP name.
    pub name: String,
    /// The catalog id the call goes to.
    pub catalog_id: String,
}

/// What generation keeps per tool besides its binding.
#[derive(Debug)]
struct ToolDecl {
    /// `MCP.<server>.<tool>`, for error messages.
    call_path: String,
    /// Description cut to `max_doc_chars`, for `$api`.
    description: String,
    /// The tool's JSDoc and function declaration, indented for a namespace body.
    block: String,
    input_schema: Arc<Value>,
    output_schema: Option<Arc<Value>>,
}

/// Everything the guest sees of a set of MCP servers: bindings, `$api` answers, declaration
/// files. Generated once per server set (see [`DeclCache`](crate::DeclCache)); immutable.
#[derive(Debug)]
pub struct McpDecls {
    servers: Vec<ServerBinding>,
    /// Per server (same order): per tool (same order) declaration data.
    decls: Vec<Vec<ToolDecl>>,
    /// Per server: its `declare namespace` text (the server file without its header comment).
    /// Per server: where its `declare namespace` starts in its file (the `$api` header).
    namespace_starts: Vec<usize>,
    server_index: HashMap<String, usize>,
    tool_index: Vec<HashMap<String, usize>>,
    catalog_index: HashMap<String, (usize, usize)>,
    files: Vec<VirtualFile>,
    max_default_depth: usize,
}

impl McpDecls {
    /// Generates bindings and declarations for `servers` with the default [`DeclLimits`].
    /// Never panics; the output is bounded per tool by the limits.
    ///
    /// ```
    /// use codemode_mcp_decls::{McpDecls, McpServer};
    /// let decls = McpDecls::generate(&[McpServer { name: "chrome-devtools".into(), ..Default::default() }]);
    /// assert_eq!(decls.servers()[0].ident, "chromeDevtools");
    /// assert_eq!(decls.files().len(), 2); // mcp/index.d.ts + mcp/chromeDevtools.d.ts
    /// ```
    pub fn generate(servers: &[McpServer]) -> McpDecls {
        Self::generate_with(servers, &DeclLimits::default())
    }

    /// Like [`McpDecls::generate`], with explicit limits.
    pub fn generate_with(servers: &[McpServer], limits: &DeclLimits) -> McpDecls {
        let mut server_scope = IdentScope::new(IdentKind::Server, limits.max_ident_chars);
        let mut bindings = Vec::with_capacity(servers.len());
        let mut decls = Vec::with_capacity(servers.len());
        let mut namespace_starts = Vec::with_capacity(servers.len());
        let mut server_index = HashMap::with_capacity(servers.len());
        let mut tool_index = Vec::with_capacity(servers.len());
        let mut catalog_index = HashMap::new();
        let mut files = Vec::with_capacity(servers.len() + 1);

        for (s, server) in servers.iter().enumerate() {
            let server_ident = server_scope.claim(&server.name);
            let mut tool_scope = IdentScope::new(IdentKind::Tool, limits.max_ident_chars);
            let mut tools = Vec::with_capacity(server.tools.len());
            let mut tool_decls = Vec::with_capacity(server.tools.len());
            let mut by_ident = HashMap::with_capacity(server.tools.len());
            for (t, tool) in server.tools.iter().enumerate() {
                let ident = tool_scope.claim(&tool.name);
                by_ident.insert(ident.clone(), t);
                catalog_index
                    .entry(tool.catalog_id.clone())
                    .or_insert((s, t));
                let block = tool_block(&ident, tool, limits);
                tool_decls.push(ToolDecl {
                    call_path: format!("MCP.{server_ident}.{ident}"),
                    description: truncate_chars(tool.description.trim(), limits.max_doc_chars),
                    block,
                    input_schema: Arc::clone(&tool.input_schema),
                    output_schema: tool.output_schema.clone(),
                });
                tools.push(ToolBinding {
                    ident,
                    name: tool.name.clone(),
                    catalog_id: tool.catalog_id.clone(),
                });
            }
            let binding = ServerBinding {
                ident: server_ident.clone(),
                name: server.name.clone(),
                tools,
                has_resources: server.has_resources,
                has_prompts: server.has_prompts,
            };
            let (file, start) = server_file(&binding, &tool_decls);
            files.push(file);
            server_index.insert(server_ident, s);
            tool_index.push(by_ident);
            namespace_starts.push(start);
            decls.push(tool_decls);
            bindings.push(binding);
        }
        if !bindings.is_empty() {
            files.insert(0, index_file(&bindings, limits));
        }
        McpDecls {
            servers: bindings,
            decls,
            namespace_starts,
            server_index,
            tool_index,
            catalog_index,
            files,
            max_default_depth: limits.max_schema_depth.min(MAX_SCHEMA_DEPTH_CAP),
        }
    }

    /// The visible servers and their tools, in input order.
    pub fn servers(&self) -> &[ServerBinding] {
        &self.servers
    }

    /// No MCP server is visible: nothing to install under `MCP`, no files.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The tool bound at `MCP.<server_ident>.<tool_ident>`.
    ///
    /// ```
    /// use codemode_mcp_decls::{McpDecls, McpServer, McpTool};
    /// let decls = McpDecls::generate(&[McpServer { name: "everything".into(), tools: vec![McpTool {
    ///     name: "get-sum".into(), catalog_id: "mcp:everything:get-sum".into(), ..Default::default() }],
    ///     ..Default::default() }]);
    /// assert_eq!(decls.binding("everything", "getSum").map(|t| t.name.as_str()), Some("get-sum"));
    /// assert!(decls.binding("everything", "get-sum").is_none());
    /// ```
    pub fn binding(&self, server_ident: &str, tool_ident: &str) -> Option<&ToolBinding> {
        let s = *self.server_index.get(server_ident)?;
        let t = *self.tool_index.get(s)?.get(tool_ident)?;
        self.servers.get(s)?.tools.get(t)
    }

    /// Turns the guest's arguments to `MCP.<server>.<tool>(...)` into the tool input: exactly one
    /// plain-object argument (none, or `null`, counts as `{}`), schema `default`s filled in for
    /// missing keys (also inside nested objects the caller passed), every `required` key present.
    ///
    /// ```
    /// use codemode_mcp_decls::{DeclError, McpDecls, McpServer, McpTool};
    /// use serde_json::json;
    /// let decls = McpDecls::generate(&[McpServer { name: "fs".into(), tools: vec![McpTool {
    ///     name: "list_directory_with_sizes".into(), catalog_id: "mcp:fs:ls".into(),
    ///     input_schema: json!({"type": "object", "required": ["path"], "properties": {
    ///         "path": {"type": "string"},
    ///         "sortBy": {"type": "string", "enum": ["name", "size"], "default": "name"}}}).into(),
    ///     ..Default::default() }], ..Default::default() }]);
    /// let input = decls.prepare_call("mcp:fs:ls", &[json!({"path": "/tmp"})])?;
    /// assert_eq!(input, json!({"path": "/tmp", "sortBy": "name"}));
    /// let err = decls.prepare_call("mcp:fs:ls", &[json!({})]).unwrap_err();
    /// assert_eq!(err.to_string(), "Missing required MCP namespace argument(s): path");
    /// # Ok::<(), DeclError>(())
    /// ```
    pub fn prepare_call(&self, catalog_id: &str, args: &[Value]) -> Result<Value, DeclError> {
        let decl = self.decl_by_catalog_id(catalog_id)?;
        let mut input = match args {
            [] | [Value::Null] => Map::new(),
            // Guest values may be nested arbitrarily deep: copy without recursion.
            [object @ Value::Object(_)] => match deep_clone(object, usize::MAX) {
                Value::Object(object) => object,
                _ => Map::new(),
            },
            [other] => {
                return Err(DeclError::NotAnObject {
                    call: decl.call_path.clone(),
                    got: json_kind(other),
                });
            }
            _ => {
                return Err(DeclError::ArgumentCount {
                    call: decl.call_path.clone(),
                    got: args.len(),
                });
            }
        };
        let root = &decl.input_schema;
        fill_defaults(root, root, &mut input, self.max_default_depth);
        let required = required_names(follow_refs(root, root));
        let missing: Vec<&str> = required
            .into_iter()
            .filter(|name| !input.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .take(DeclError::MAX_LISTED_NAMES)
                .map(|n| quoted(n))
                .collect();
            let more = missing.len() - names.len();
            return Err(DeclError::MissingRequired { names, more });
        }
        Ok(Value::Object(input))
    }

    /// The answer to `MCP.<server_ident>.$api(tool?, { schema })` as plain JSON (the
    /// `McpApiHeader` type of `mcp/index.d.ts`): the TypeScript header text of the server (or of
    /// one tool, found by identifier or MCP name), the tool list, and with `schema` the JSON
    /// Schemas.
    ///
    /// ```
    /// use codemode_mcp_decls::{McpDecls, McpServer, McpTool};
    /// let decls = McpDecls::generate(&[McpServer { name: "everything".into(), tools: vec![McpTool {
    ///     name: "echo".into(), catalog_id: "mcp:everything:echo".into(), ..Default::default() }],
    ///     ..Default::default() }]);
    /// let api = decls.api("everything", Some("echo"), true)?;
    /// assert!(api["header"].as_str().unwrap().contains("function echo("));
    /// assert!(api["tools"][0].get("inputSchema").is_some());
    /// # Ok::<(), codemode_mcp_decls::DeclError>(())
    /// ```
    pub fn api(
        &self,
        server_ident: &str,
        tool: Option<&str>,
        schema: bool,
    ) -> Result<Value, DeclError> {
        let s = self.server_position(server_ident)?;
        // `files[0]` is the index: server `s` has file `s + 1`.
        let namespace = self
            .files
            .get(s + 1)
            .zip(self.namespace_starts.get(s))
            .and_then(|(file, start)| file.text.get(*start..));
        let (Some(server), Some(decls), Some(namespace)) =
            (self.servers.get(s), self.decls.get(s), namespace)
        else {
            return Err(self.unknown_server(server_ident));
        };
        let chosen: Vec<usize> = match tool {
            None => (0..server.tools.len()).collect(),
            Some(name) => {
                let by_ident = self.tool_index.get(s).and_then(|m| m.get(name)).copied();
                let by_name = || server.tools.iter().position(|t| t.name == name);
                match by_ident.or_else(by_name) {
                    Some(t) => vec![t],
                    None => {
                        return Err(DeclError::UnknownTool {
                            server: server.ident.clone(),
                            tool: quoted(name),
                            available: name_list(server.tools.iter().map(|t| t.ident.as_str())),
                        });
                    }
                }
            }
        };
        let header = match (tool, chosen.first().and_then(|t| decls.get(*t))) {
            (Some(_), Some(decl)) => {
                format!(
                    "declare namespace MCP.{} {{\n{}}}\n",
                    server.ident, decl.block
                )
            }
            _ => namespace.to_owned(),
        };
        let tools: Vec<Value> = chosen
            .iter()
            .filter_map(|t| Some((server.tools.get(*t)?, decls.get(*t)?)))
            .map(|(binding, decl)| {
                let mut row = Map::new();
                row.insert("name".into(), Value::String(binding.ident.clone()));
                row.insert("mcpName".into(), Value::String(binding.name.clone()));
                row.insert(
                    "description".into(),
                    Value::String(decl.description.clone()),
                );
                if schema {
                    row.insert("inputSchema".into(), bounded_copy(&decl.input_schema));
                    if let Some(output) = &decl.output_schema {
                        row.insert("outputSchema".into(), bounded_copy(output));
                    }
                }
                Value::Object(row)
            })
            .collect();
        Ok(json!({
            "server": server.ident,
            "name": server.name,
            "header": header,
            "tools": tools,
            "resources": server.has_resources,
            "prompts": server.has_prompts,
        }))
    }

    /// The virtual declaration files: `mcp/index.d.ts` first, then one `mcp/<server>.d.ts` per
    /// server in input order; none when no server is visible.
    pub fn files(&self) -> &[VirtualFile] {
        &self.files
    }

    /// `API.list(prefix?)`: the files whose path starts with `prefix` (all for `None`, `"mcp"`
    /// or `"mcp/"`). A malformed prefix, or one that matches nothing, is an error.
    ///
    /// ```
    /// use codemode_mcp_decls::{McpDecls, McpServer};
    /// let decls = McpDecls::generate(&[McpServer { name: "github".into(), ..Default::default() }]);
    /// let rows = decls.list(Some("mcp/"))?;
    /// assert_eq!(rows.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["mcp/index.d.ts", "mcp/github.d.ts"]);
    /// assert!(decls.list(Some("../etc")).is_err());
    /// # Ok::<(), codemode_mcp_decls::DeclError>(())
    /// ```
    pub fn list(&self, prefix: Option<&str>) -> Result<Vec<FileInfo>, DeclError> {
        let Some(prefix) = prefix else {
            return Ok(self.files.iter().map(VirtualFile::info).collect());
        };
        let prefix = validate_path(prefix)?;
        if prefix == ROOT {
            return Ok(self.files.iter().map(VirtualFile::info).collect());
        }
        let rows: Vec<FileInfo> = self
            .files
            .iter()
            .filter(|f| f.path.starts_with(prefix))
            .map(VirtualFile::info)
            .collect();
        if rows.is_empty() {
            return Err(DeclError::UnknownPath {
                path: quoted(prefix),
            });
        }
        Ok(rows)
    }

    /// `API.read(path)`: the text of one file. Malformed or unknown paths are errors.
    ///
    /// ```
    /// use codemode_mcp_decls::{DeclError, McpDecls, McpServer};
    /// let decls = McpDecls::generate(&[McpServer { name: "github".into(), ..Default::default() }]);
    /// assert!(decls.read("mcp/index.d.ts")?.contains("declare namespace MCP"));
    /// assert!(matches!(decls.read("mcp/../x"), Err(DeclError::InvalidPath { .. })));
    /// assert!(matches!(decls.read("mcp/gitlab.d.ts"), Err(DeclError::UnknownPath { .. })));
    /// # Ok::<(), DeclError>(())
    /// ```
    pub fn read(&self, path: &str) -> Result<&str, DeclError> {
        let path = validate_path(path)?;
        self.files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.text.as_str())
            .ok_or_else(|| DeclError::UnknownPath { path: quoted(path) })
    }

    fn decl_by_catalog_id(&self, catalog_id: &str) -> Result<&ToolDecl, DeclError> {
        self.catalog_index
            .get(catalog_id)
            .and_then(|(s, t)| self.decls.get(*s)?.get(*t))
            .ok_or_else(|| DeclError::UnknownCatalogId {
                catalog_id: quoted(catalog_id),
            })
    }

    fn server_position(&self, server_ident: &str) -> Result<usize, DeclError> {
        self.server_index
            .get(server_ident)
            .copied()
            .ok_or_else(|| self.unknown_server(server_ident))
    }

    fn unknown_server(&self, server_ident: &str) -> DeclError {
        DeclError::UnknownServer {
            server: quoted(server_ident),
            available: name_list(self.servers.iter().map(|s| s.ident.as_str())),
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSDoc and `function` declaration of one tool, indented for a namespace body.
fn tool_block(ident: &str, tool: &crate::McpTool, limits: &DeclLimits) -> String {
    let root: &Value = &tool.input_schema;
    let mut writer = TypeWriter::new(root, limits);
    let resolved = follow_refs(root, root);

    // The input parameter: an object with fields (multi-line, with @param docs), or a type.
    let mut params = Vec::new();
    let (param_type, optional) = match resolved {
        Value::Object(map)
            if (map.contains_key("properties") || map.contains_key("required"))
                && matches!(map.get("type"), None | Some(Value::String(_)))
                && map.get("type").and_then(Value::as_str).unwrap_or("object") == "object" =>
        {
            let shape = writer.object_shape(map, 0);
            let optional = shape.fields.iter().all(|f| f.optional);
            let text = if shape.fields.is_empty() {
                shape.inline().into_owned()
            } else {
                let mut text = String::with_capacity(48 * shape.fields.len() + 16);
                text.push_str("{\n");
                for field in &shape.fields {
                    text.push_str("    ");
                    text.push_str(&field.key);
                    text.push_str(if field.optional { "?: " } else { ": " });
                    text.push_str(&field.ty);
                    text.push_str(";\n");
                    if let Some(line) = field.schema.and_then(|s| param_doc(root, s, limits)) {
                        let mut param = String::from("@param ");
                        param.push_str(&comment_line(field.name, limits.max_literal_chars));
                        param.push(' ');
                        param.push_str(&line);
                        params.push(param);
                    }
                }
                if let Some(index) = &shape.index {
                    let _ = writeln!(text, "    [key: string]: {index};");
                }
                text.push_str("  }");
                text
            };
            (text, optional)
        }
        Value::Object(map)
            if ["anyOf", "oneOf", "allOf"]
                .iter()
                .any(|k| map.contains_key(*k)) =>
        {
            let ty = writer.ty(resolved, 0);
            let optional = required_names(resolved).is_empty();
            if ty == "unknown" {
                ("Record<string, unknown>".to_owned(), optional)
            } else {
                (ty.into_owned(), optional)
            }
        }
        // An object without named properties: `Record<string, T>` from `additionalProperties`.
        Value::Object(map)
            if matches!(map.get("type"), None | Some(Value::String(_)))
                && map.get("type").and_then(Value::as_str).unwrap_or("object") == "object"
                && map.contains_key("additionalProperties") =>
        {
            let ty = writer.ty(resolved, 0);
            if ty == "unknown" {
                ("Record<string, unknown>".to_owned(), true)
            } else {
                (ty.into_owned(), true)
            }
        }
        // `{}`, `true`, a non-object root, a wrong-typed `type`: calls still take one object.
        _ => ("Record<string, unknown>".to_owned(), true),
    };

    let result = match &tool.output_schema {
        Some(output) => {
            let ty = TypeWriter::new(output, limits).ty(output, 0);
            if ty == "unknown" {
                "McpToolResult".to_owned()
            } else {
                format!("McpToolResult<{ty}>")
            }
        }
        None => "McpToolResult".to_owned(),
    };

    let mut doc = comment_lines(&tool.description, limits.max_doc_chars);
    if tool.name != ident {
        if !doc.is_empty() {
            doc.push(String::new());
        }
        doc.push(format!(
            "MCP tool `{}`.",
            comment_line(&tool.name, MAX_NAME_CHARS)
        ));
    }
    doc.extend(params);

    let doc_len: usize = doc.iter().map(|l| l.len() + 8).sum();
    let mut out = String::with_capacity(doc_len + param_type.len() + result.len() + 64);
    write_block(&mut out, "  ", &doc);
    let _ = writeln!(
        out,
        "  function {ident}(input{}: {param_type}): Promise<{result}>;",
        if optional { "?" } else { "" }
    );
    out
}

/// The `@param` text of a property: its description and default, if any.
fn param_doc(root: &Value, schema: &Value, limits: &DeclLimits) -> Option<String> {
    let (description, default) = doc_facts(root, schema);
    let mut text = description
        .map(|d| comment_line(d, limits.max_param_doc_chars))
        .unwrap_or_default();
    if let Some(default) = default {
        let shown = literal(default, MAX_DEFAULT_CHARS).or_else(|| {
            serde_json::to_string(default)
                .ok()
                .filter(|s| s.chars().count() <= MAX_DEFAULT_CHARS)
        });
        if let Some(shown) = shown {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&format!(
                "(default: {})",
                comment_line(&shown, MAX_DEFAULT_CHARS)
            ));
        }
    }
    (!text.is_empty()).then_some(text)
}

/// Appends `declare namespace MCP.<server> { ... }` for one server to `out`.
fn write_server_namespace(out: &mut String, server: &ServerBinding, decls: &[ToolDecl]) {
    out.push_str("declare namespace MCP.");
    out.push_str(&server.ident);
    out.push_str(" {\n");
    out.push_str(API_DECL);
    for decl in decls {
        out.push('\n');
        out.push_str(&decl.block);
    }
    if server.has_resources {
        out.push_str(RESOURCES_DECL);
    }
    if server.has_prompts {
        out.push_str(PROMPTS_DECL);
    }
    out.push_str("}\n");
}

/// "3 tools, resources, prompts".
fn server_summary(server: &ServerBinding) -> String {
    let mut summary = match server.tools.len() {
        1 => "1 tool".to_owned(),
        n => format!("{n} tools"),
    };
    if server.has_resources {
        summary.push_str(", resources");
    }
    if server.has_prompts {
        summary.push_str(", prompts");
    }
    summary
}

/// A server's declaration file, and where its `declare namespace` starts in it.
fn server_file(server: &ServerBinding, decls: &[ToolDecl]) -> (VirtualFile, usize) {
    let name = comment_line(&server.name, MAX_NAME_CHARS);
    let capacity = decls.iter().map(|d| d.block.len() + 1).sum::<usize>() + 4_096;
    let mut text = String::with_capacity(capacity);
    write_block(
        &mut text,
        "",
        &[
            format!(
                "MCP server \"{name}\" as `MCP.{}`: {}.",
                server.ident,
                server_summary(server)
            ),
            "Call a tool with one object argument: `await MCP.<server>.<tool>({ ... })`.".into(),
            "Shared types (McpToolResult, McpApiHeader, ...) are in mcp/index.d.ts.".into(),
        ],
    );
    let start = text.len();
    write_server_namespace(&mut text, server, decls);
    let file = VirtualFile {
        path: format!("{ROOT}/{}.d.ts", server.ident),
        description: format!(
            "MCP server \"{name}\" (MCP.{}): {}",
            server.ident,
            server_summary(server)
        ),
        text,
    };
    (file, start)
}

fn index_file(servers: &[ServerBinding], limits: &DeclLimits) -> VirtualFile {
    let mut text = String::new();
    write_block(
        &mut text,
        "",
        &[
            "MCP servers visible to this code-mode run. Read-only, generated per run.".into(),
            "Each server has a declaration file: `await API.read(\"mcp/<server>.d.ts\")`.".into(),
            "Call a tool with exactly one object argument: `await MCP.<server>.<tool>({ ... })`;"
                .into(),
            "`await MCP.<server>.$api(toolName?, { schema: true })` returns the header inline."
                .into(),
        ],
    );
    text.push('\n');
    text.push_str(INDEX_TYPES);
    text.push_str("\ndeclare namespace MCP {\n");
    for (i, server) in servers.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let mut doc = vec![format!(
            "MCP server \"{}\": {}. Declarations: mcp/{}.d.ts",
            comment_line(&server.name, MAX_NAME_CHARS),
            server_summary(server),
            server.ident
        )];
        if !server.tools.is_empty() {
            let mut names: Vec<&str> = server
                .tools
                .iter()
                .take(limits.max_index_tool_names)
                .map(|t| t.ident.as_str())
                .collect();
            let more = server.tools.len() - names.len();
            let more_text = format!("and {more} more");
            if more > 0 {
                names.push(&more_text);
            }
            doc.push(format!("Tools: {}.", names.join(", ")));
        }
        write_block(&mut text, "  ", &doc);
        let _ = writeln!(text, "  namespace {} {{}}", server.ident);
    }
    text.push_str("}\n");
    VirtualFile {
        path: INDEX_PATH.to_owned(),
        description: format!(
            "Root MCP namespace, shared types and the server list ({} server{}: {})",
            servers.len(),
            if servers.len() == 1 { "" } else { "s" },
            name_list(servers.iter().map(|s| s.ident.as_str()))
        ),
        text,
    }
}
