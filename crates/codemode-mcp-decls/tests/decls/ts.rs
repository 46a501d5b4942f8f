//! "Is this TypeScript?": `codemode_ts::check_declaration_file` (swc's parser in `.d.ts` mode),
//! plus the comment-safety invariant.

use codemode_mcp_decls::McpDecls;

/// Parses `text` as a TypeScript declaration file through `codemode-ts` (the one crate that knows
/// swc); any error, fatal or recovered, fails. Returns the number of top-level statements.
pub(crate) fn parse_dts(text: &str) -> Result<usize, String> {
    let statements = codemode_ts::check_declaration_file(text).map_err(|e| e.to_string())?;
    if statements == 0 {
        return Err("no declarations".to_owned());
    }
    Ok(statements)
}

/// Every `*/` in generated text closes a comment the generator opened: it follows a space and
/// ends the line. An escaped description can never produce one.
pub(crate) fn comment_ends_are_ours(text: &str) -> Result<(), String> {
    for (at, _) in text.match_indices("*/") {
        let before = text.get(..at).and_then(|t| t.chars().last());
        let after = text.get(at + 2..).and_then(|t| t.chars().next());
        if before != Some(' ') || after != Some('\n') {
            let start = at.saturating_sub(40);
            return Err(format!(
                "stray `*/` at byte {at}: {:?}",
                text.get(start..(at + 40).min(text.len())).unwrap_or("")
            ));
        }
    }
    Ok(())
}

/// Every file and every `$api` header of `decls` parses and keeps its comments closed.
pub(crate) fn assert_all_valid(decls: &McpDecls) {
    for file in decls.files() {
        if let Err(e) = parse_dts(&file.text).and_then(|_| comment_ends_are_ours(&file.text)) {
            panic!("{} is not valid TypeScript: {e}\n{}", file.path, file.text);
        }
    }
    for server in decls.servers() {
        for tool in &server.tools {
            let api = decls
                .api(&server.ident, Some(&tool.ident), false)
                .expect("every bound tool has an $api header");
            let header = api["header"].as_str().expect("header is a string");
            if let Err(e) = parse_dts(header).and_then(|_| comment_ends_are_ours(header)) {
                panic!(
                    "$api header of {}.{} invalid: {e}\n{header}",
                    server.ident, tool.ident
                );
            }
        }
    }
}

#[test]
fn the_checker_rejects_broken_declarations() {
    assert!(
        parse_dts("declare namespace MCP.x {\n  function f(input: {): Promise<X>;\n}\n").is_err()
    );
    assert!(parse_dts("declare namespace MCP.x {\n  function delete(): void;\n}\n").is_err());
    assert!(parse_dts("/** a */ b */\ndeclare namespace MCP.x {}\n").is_err());
    assert_eq!(
        parse_dts("declare namespace MCP.x {\n  function f(): void;\n}\n"),
        Ok(1)
    );
    assert!(comment_ends_are_ours("/** x */ declare const y: 1; /* */\n").is_err());
    assert!(comment_ends_are_ours("/** x */\n").is_ok());
}
