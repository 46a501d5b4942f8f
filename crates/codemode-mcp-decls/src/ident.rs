//! MCP server and tool names -> unique camelCase JavaScript identifiers.

use std::collections::HashSet;

/// Property names that would break or poison a guest object, in every scope. `then` is on the list
/// because an object with a `then` function is a thenable: `await MCP.server` would call it.
const OBJECT_RESERVED: &[&str] = &["__proto__", "constructor", "prototype", "then"];

/// Names a tool identifier may not take: the members every `MCP.<server>` object already has.
const TOOL_RESERVED: &[&str] = &["$api", "resources", "prompts"];

/// Names a server identifier may not take besides the guest's own globals
/// ([`codemode_guest_names::CODE_MODE_GLOBALS`] and the internal prefix): `index`, whose
/// declaration file would collide with `mcp/index.d.ts`.
const SERVER_RESERVED: &[&str] = &["index"];

/// The kind of scope an identifier is claimed in; decides the reserved names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdentKind {
    /// Properties of the root `MCP` object.
    Server,
    /// Properties of one `MCP.<server>` object.
    Tool,
}

impl IdentKind {
    fn fallback(self) -> &'static str {
        match self {
            IdentKind::Server => "server",
            IdentKind::Tool => "tool",
        }
    }

    fn is_reserved(self, ident: &str) -> bool {
        // One reserved-word list for the workspace: ECMAScript's reserved words, the strict-mode
        // ones and the restricted bindings `arguments` / `eval` (a `.d.ts` cannot declare them).
        codemode_guest_names::is_reserved_word(ident)
            || OBJECT_RESERVED.contains(&ident)
            || match self {
                IdentKind::Server => {
                    SERVER_RESERVED.contains(&ident)
                        || codemode_guest_names::is_code_mode_global(ident)
                }
                IdentKind::Tool => TOOL_RESERVED.contains(&ident),
            }
    }
}

/// Converts an MCP name to a camelCase ASCII identifier, or "" when the name has no ASCII letter
/// or digit.
///
/// Words are runs of ASCII letters and digits; everything else (punctuation, spaces, emoji, other
/// scripts) separates words. Inside a run a new word starts at a lower-to-upper change
/// (`createIssue`) and before the last capital of a capital run followed by a lower-case letter
/// (`HTTPServer` -> `http`, `Server`). The first word is lower-cased, the others capitalised; a
/// leading digit gets a `_` prefix; the result is cut to `max_chars`.
pub(crate) fn camel_case(name: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(name.len().min(max_chars) + 1);
    let mut words = 0usize;
    for run in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let bytes = run.as_bytes();
        let mut start = 0;
        for i in 1..=bytes.len() {
            let boundary = i == bytes.len() || {
                let prev = bytes.get(i - 1).copied().unwrap_or(b' ');
                let cur = bytes.get(i).copied().unwrap_or(b' ');
                let next = bytes.get(i + 1).copied().unwrap_or(b' ');
                cur.is_ascii_uppercase()
                    && (prev.is_ascii_lowercase()
                        || prev.is_ascii_digit()
                        || (prev.is_ascii_uppercase() && next.is_ascii_lowercase()))
            };
            if boundary {
                let word = run.get(start..i).unwrap_or("");
                push_word(&mut out, word, words == 0);
                if !word.is_empty() {
                    words += 1;
                }
                start = i;
            }
            if out.len() >= max_chars {
                break;
            }
        }
        if out.len() >= max_chars {
            break;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out.truncate(max_chars.max(1));
    out
}

fn push_word(out: &mut String, word: &str, first: bool) {
    for (i, c) in word.chars().enumerate() {
        if i == 0 && !first {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
}

/// The identifiers already given out in one scope.
#[derive(Debug)]
pub(crate) struct IdentScope {
    kind: IdentKind,
    max_chars: usize,
    taken: HashSet<String>,
}

impl IdentScope {
    pub(crate) fn new(kind: IdentKind, max_chars: usize) -> Self {
        Self {
            kind,
            max_chars,
            taken: HashSet::new(),
        }
    }

    /// Claims the identifier for `name`: its camelCase form, or that form with the first free
    /// suffix 2, 3, ... when it is taken or reserved.
    pub(crate) fn claim(&mut self, name: &str) -> String {
        let mut base = camel_case(name, self.max_chars);
        if base.is_empty() {
            base = self.kind.fallback().to_owned();
        }
        let mut candidate = base.clone();
        let mut n: u64 = 2;
        while self.kind.is_reserved(&candidate) || self.taken.contains(&candidate) {
            candidate = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

/// Whether `key` can be written bare as a property name in a TypeScript type literal.
pub(crate) fn is_plain_property_name(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
