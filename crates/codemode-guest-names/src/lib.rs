//! The names a code-mode guest program cannot be given for something new: JavaScript's reserved
//! words and the globals code mode itself installs. One list of each, shared by the crates that
//! mint guest identifiers (`codemode-mcp-decls` for `MCP.<server>.<tool>` bindings and their
//! declaration files, `codemode-namespaces` for plugin namespace globals).
//!
//! This crate knows nothing about QuickJS, catalogs, MCP or plugins, and has no dependencies:
//! it is two constant lists and the checks over them. Which JavaScript built-ins a namespace
//! must not shadow is `codemode-namespaces`' business, checked against the real VM in
//! `codemode-core`'s tests. No feature flags.
//!
//! ```
//! use codemode_guest_names::{is_code_mode_global, is_reserved_word};
//!
//! assert!(is_reserved_word("class"));
//! assert!(is_reserved_word("let")); // strict-mode reserved: guest cells are strict-mode safe
//! assert!(is_reserved_word("arguments")); // a restricted binding in strict mode
//! assert!(!is_reserved_word("undefined")); // a global property, not a reserved word
//! assert!(is_code_mode_global("ALL_TOOLS"));
//! assert!(is_code_mode_global("__OpenClaw_bridge")); // the internal prefix, any ASCII case
//! ```
#![forbid(unsafe_code)]

/// ECMAScript's *ReservedWord* production (ECMA-262 §12.7.2, "Keywords and Reserved Words"):
/// the keywords, the future reserved word `enum` and the literals `null`, `true`, `false`.
/// `await` and `yield` are in it too; the specification lets them be identifiers in some
/// contexts, code mode never does (a cell is the body of an async function).
pub const RESERVED_WORDS: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "new",
    "null",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Words reserved in strict-mode code (ECMA-262 §12.7.2 and §13.1.1): they cannot name a
/// binding there, so a name meant to be declared (a `.d.ts` function, a global) avoids them.
pub const STRICT_MODE_RESERVED_WORDS: &[&str] = &[
    "implements",
    "interface",
    "let",
    "package",
    "private",
    "protected",
    "public",
    "static",
];

/// Identifiers strict-mode code cannot bind (ECMA-262 §13.1.1: "It is a Syntax Error if ...
/// the StringValue of Identifier is `arguments` or `eval`"). Treated as reserved words.
pub const RESTRICTED_BINDINGS: &[&str] = &["arguments", "eval"];

/// Whether `name` is in [`RESERVED_WORDS`], [`STRICT_MODE_RESERVED_WORDS`] or
/// [`RESTRICTED_BINDINGS`]: it cannot name a declaration in a strict-mode async function body.
///
/// `undefined`, `NaN` and `Infinity` are not reserved words (they are non-writable properties
/// of the global object); callers that must not shadow them check the built-in globals too.
pub fn is_reserved_word(name: &str) -> bool {
    RESERVED_WORDS.contains(&name)
        || STRICT_MODE_RESERVED_WORDS.contains(&name)
        || RESTRICTED_BINDINGS.contains(&name)
}

/// The globals code mode installs in every guest VM: the catalog and MCP views (`ALL_TOOLS`,
/// `tools`, `MCP`, `API`), the namespace root (`namespaces`) and the sandbox's own functions
/// (`text`, `json`, `yield_control`), and the session's `results` store. Visible plugin
/// namespaces add their own global names.
pub const CODE_MODE_GLOBALS: &[&str] = &[
    "ALL_TOOLS",
    "API",
    "MCP",
    "json",
    "namespaces",
    "results",
    "text",
    "tools",
    "yield_control",
];

/// Prefix of the sandbox's internal bridge names, reserved in any ASCII case.
pub const INTERNAL_GLOBAL_PREFIX: &str = "__openclaw";

/// Whether `name` is a code-mode global ([`CODE_MODE_GLOBALS`]) or starts with
/// [`INTERNAL_GLOBAL_PREFIX`], compared ASCII-case-insensitively.
pub fn is_code_mode_global(name: &str) -> bool {
    CODE_MODE_GLOBALS.contains(&name) || has_internal_prefix(name)
}

/// Whether `name` starts with [`INTERNAL_GLOBAL_PREFIX`] in any ASCII case.
pub fn has_internal_prefix(name: &str) -> bool {
    name.as_bytes()
        .get(..INTERNAL_GLOBAL_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(INTERNAL_GLOBAL_PREFIX.as_bytes()))
}
