//! Table tests: `API.list` / `API.read` path handling.

use codemode_mcp_decls::{DeclError, McpDecls, McpServer};

fn decls() -> McpDecls {
    McpDecls::generate(&[
        McpServer {
            name: "github".into(),
            ..Default::default()
        },
        McpServer {
            name: "docs".into(),
            has_resources: true,
            ..Default::default()
        },
    ])
}

/// `API.read(path)`: Ok(first line of the file) or the error message.
fn check_read(path: &str, expect: Result<&str, &str>) {
    let decls = decls();
    let got = decls
        .read(path)
        .map(|t| t.lines().next().unwrap_or("").to_owned())
        .map_err(|e| e.to_string());
    assert_eq!(
        got,
        expect.map(str::to_owned).map_err(str::to_owned),
        "read({path:?})"
    );
}

/// `API.list(prefix)`: Ok(paths) or the error message.
fn check_list(prefix: Option<&str>, expect: Result<&[&str], &str>) {
    let decls = decls();
    let got = decls
        .list(prefix)
        .map(|rows| rows.into_iter().map(|r| r.path).collect::<Vec<_>>())
        .map_err(|e| e.to_string());
    let expect = expect
        .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
        .map_err(str::to_owned);
    assert_eq!(got, expect, "list({prefix:?})");
}

#[test]
fn read_paths() {
    check_read("mcp/index.d.ts", Ok("/**"));
    check_read("mcp/github.d.ts", Ok("/**"));
    check_read("mcp/docs.d.ts/", Ok("/**"));
    check_read(
        "mcp/gitlab.d.ts",
        Err("no virtual file \"mcp/gitlab.d.ts\"; API.list(\"mcp\") lists the available files"),
    );
    check_read(
        "mcp",
        Err("no virtual file \"mcp\"; API.list(\"mcp\") lists the available files"),
    );
    check_read(
        "github.d.ts",
        Err("no virtual file \"github.d.ts\"; API.list(\"mcp\") lists the available files"),
    );
    check_read(
        "MCP/github.d.ts",
        Err("no virtual file \"MCP/github.d.ts\"; API.list(\"mcp\") lists the available files"),
    );
    check_read("", Err("invalid virtual file path \"\": the path is empty"));
    check_read(
        "/mcp/github.d.ts",
        Err(
            "invalid virtual file path \"/mcp/github.d.ts\": absolute paths are not allowed; paths start with \"mcp/\"",
        ),
    );
    check_read(
        "C:/mcp/github.d.ts",
        Err(
            "invalid virtual file path \"C:/mcp/github.d.ts\": absolute paths are not allowed; paths start with \"mcp/\"",
        ),
    );
    check_read(
        "~/x",
        Err(
            "invalid virtual file path \"~/x\": absolute paths are not allowed; paths start with \"mcp/\"",
        ),
    );
    check_read(
        "mcp/../mcp/github.d.ts",
        Err(
            "invalid virtual file path \"mcp/../mcp/github.d.ts\": \".\" and \"..\" segments are not allowed",
        ),
    );
    check_read(
        "./mcp/github.d.ts",
        Err(
            "invalid virtual file path \"./mcp/github.d.ts\": \".\" and \"..\" segments are not allowed",
        ),
    );
    check_read(
        "mcp/./github.d.ts",
        Err(
            "invalid virtual file path \"mcp/./github.d.ts\": \".\" and \"..\" segments are not allowed",
        ),
    );
    check_read(
        "..",
        Err("invalid virtual file path \"..\": \".\" and \"..\" segments are not allowed"),
    );
    check_read(
        "mcp//github.d.ts",
        Err(
            "invalid virtual file path \"mcp//github.d.ts\": empty path segments (\"//\") are not allowed",
        ),
    );
    check_read(
        "mcp\\github.d.ts",
        Err(
            "invalid virtual file path \"mcp\\github.d.ts\": backslashes are not allowed; use \"/\"",
        ),
    );
    check_read(
        "mcp/github.d.ts\0",
        Err("invalid virtual file path \"mcp/github.d.ts\0\": control characters are not allowed"),
    );
}

#[test]
fn list_prefixes() {
    let all: &[&str] = &["mcp/index.d.ts", "mcp/github.d.ts", "mcp/docs.d.ts"];
    check_list(None, Ok(all));
    check_list(Some("mcp"), Ok(all));
    check_list(Some("mcp/"), Ok(all));
    check_list(Some("mcp/git"), Ok(&["mcp/github.d.ts"]));
    check_list(Some("mcp/docs.d.ts"), Ok(&["mcp/docs.d.ts"]));
    check_list(
        Some("mcp/gitlab"),
        Err("no virtual file \"mcp/gitlab\"; API.list(\"mcp\") lists the available files"),
    );
    check_list(
        Some(""),
        Err("invalid virtual file path \"\": the path is empty"),
    );
    check_list(
        Some("/"),
        Err(
            "invalid virtual file path \"/\": absolute paths are not allowed; paths start with \"mcp/\"",
        ),
    );
    check_list(
        Some("mcp/.."),
        Err("invalid virtual file path \"mcp/..\": \".\" and \"..\" segments are not allowed"),
    );
}

#[test]
fn list_rows_report_utf8_bytes() {
    let decls = McpDecls::generate(&[McpServer {
        name: "ünïcödé-docs".into(),
        ..Default::default()
    }]);
    for row in decls.list(None).expect("lists") {
        let text = decls.read(&row.path).expect("reads");
        assert_eq!(row.bytes, text.len());
        assert!(
            text.len() > text.chars().count(),
            "{} has multi-byte characters",
            row.path
        );
    }
    let json = serde_json::to_value(&decls.list(None).expect("lists")[0]).expect("serializes");
    assert_eq!(
        json.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        // A `serde_json::Map` is sorted (no `preserve_order` in this workspace).
        Some(vec!["bytes".into(), "description".into(), "path".into()])
    );
}

#[test]
fn no_servers_no_files() {
    let decls = McpDecls::generate(&[]);
    assert!(decls.is_empty());
    assert!(decls.files().is_empty());
    assert_eq!(decls.list(Some("mcp")).map(|r| r.len()), Ok(0));
    assert!(matches!(
        decls.read("mcp/index.d.ts"),
        Err(DeclError::UnknownPath { .. })
    ));
}

#[test]
fn huge_paths_are_rejected_with_a_short_message() {
    let path = format!("mcp/{}", "a".repeat(100_000));
    let err = decls().read(&path).unwrap_err();
    assert!(err.to_string().len() < 300, "{err}");
}
