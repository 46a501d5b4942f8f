//! The pre-evaluation check that rejects module access (SPEC §7).
//!
//! This is a small JavaScript scanner, not a parser: it skips string literals, template text,
//! comments and regular-expression literals, and looks at every remaining identifier token.
//! The real guarantee is elsewhere (the VM has no module loader and no `require`); this check
//! exists so a program that tries gets the clear `invalid_input` message before it runs.

use crate::RunError;

/// Rejects `import` declarations, dynamic `import()`, `import.meta` and `require(` calls.
///
/// The scan is not fooled by strings, comments, regular-expression literals, template text, or
/// identifiers that merely contain `import` (`important`, `obj.import`, `{ import: 1 }`), and it
/// looks inside `${...}` template substitutions, however deeply nested.
///
/// # Errors
/// [`RunError::ModuleAccess`] ("code mode module access is disabled.") when module access is found.
///
/// # Example
/// ```
/// use codemode_sandbox::check_module_access;
///
/// assert!(check_module_access("const important = 'import x from \"y\"'; return important;").is_ok());
/// let error = check_module_access("const fs = await import('fs');").unwrap_err();
/// assert_eq!(error.to_string(), "code mode module access is disabled.");
/// ```
pub fn check_module_access(source: &str) -> Result<(), RunError> {
    let mut scanner = Scanner {
        bytes: source.as_bytes(),
        pos: 0,
        prev: Prev::Start,
        templates: Vec::new(),
    };
    if scanner.finds_module_access() {
        Err(RunError::ModuleAccess)
    } else {
        Ok(())
    }
}

/// The previous significant token, which decides whether `/` starts a regular expression.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    Start,
    /// A value-ending token: identifier, number, literal, `)` or `]`. A `/` after it divides.
    Value,
    /// A keyword after which an expression starts (`return /re/`).
    ExpressionKeyword,
    /// The `.` or `?.` member access punctuator.
    Dot,
    /// Any other punctuator, including `}`; a `/` after it starts a regular expression.
    Punct,
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    prev: Prev,
    /// One entry per open template substitution: the `{` nesting depth inside it.
    templates: Vec<usize>,
}

const EXPRESSION_KEYWORDS: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

impl Scanner<'_> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    fn finds_module_access(&mut self) -> bool {
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == Some(b'/') => self.skip_line_comment(),
                b'/' if self.peek(1) == Some(b'*') => self.skip_block_comment(),
                b'/' => {
                    if matches!(self.prev, Prev::Value) {
                        self.pos += 1;
                        self.prev = Prev::Punct;
                    } else {
                        self.skip_regex();
                        self.prev = Prev::Value;
                    }
                }
                b'\'' | b'"' => {
                    self.skip_string(byte);
                    self.prev = Prev::Value;
                }
                b'`' => {
                    self.pos += 1;
                    self.skip_template_text();
                }
                b'{' => {
                    if let Some(depth) = self.templates.last_mut() {
                        *depth += 1;
                    }
                    self.pos += 1;
                    self.prev = Prev::Punct;
                }
                b'}' => {
                    self.pos += 1;
                    match self.templates.last_mut() {
                        Some(0) => {
                            // End of a `${...}` substitution: back to template text.
                            self.templates.pop();
                            self.skip_template_text();
                        }
                        Some(depth) => {
                            *depth -= 1;
                            self.prev = Prev::Punct;
                        }
                        None => self.prev = Prev::Punct,
                    }
                }
                b')' | b']' => {
                    self.pos += 1;
                    self.prev = Prev::Value;
                }
                b'.' if self.peek(1).is_some_and(|b| b.is_ascii_digit()) => self.skip_number(),
                b'.' => {
                    self.pos += 1;
                    self.prev = if self.peek(0) == Some(b'.') {
                        Prev::Punct
                    } else {
                        Prev::Dot
                    };
                    if self.prev == Prev::Punct {
                        // Spread `...`: consume the remaining dots.
                        while self.peek(0) == Some(b'.') {
                            self.pos += 1;
                        }
                    }
                }
                b'?' if self.peek(1) == Some(b'.')
                    && !self.peek(2).is_some_and(|b| b.is_ascii_digit()) =>
                {
                    self.pos += 2;
                    self.prev = Prev::Dot;
                }
                b'0'..=b'9' => self.skip_number(),
                _ if is_identifier_byte(byte) || byte == b'\\' => {
                    if self.identifier_is_module_access() {
                        return true;
                    }
                }
                _ => {
                    self.pos += 1;
                    self.prev = Prev::Punct;
                }
            }
        }
        false
    }

    /// Consumes an identifier (or keyword) and reports whether it is module access.
    fn identifier_is_module_access(&mut self) -> bool {
        let start = self.pos;
        while let Some(byte) = self.peek(0) {
            if is_identifier_byte(byte) || byte.is_ascii_digit() {
                self.pos += 1;
            } else if byte == b'\\' {
                // A unicode escape inside an identifier (`\u0069mport`): skip `\` and the next byte.
                self.pos += 2;
            } else {
                break;
            }
        }
        let word = self.bytes.get(start..self.pos).unwrap_or_default();
        let after_dot = self.prev == Prev::Dot;
        self.prev = if std::str::from_utf8(word).is_ok_and(|w| EXPRESSION_KEYWORDS.contains(&w))
            && !after_dot
        {
            Prev::ExpressionKeyword
        } else {
            Prev::Value
        };
        if after_dot {
            return false;
        }
        let next = self.next_significant_byte();
        match word {
            // `import x`, `import {`, `import(`, `import.meta`, `import "x"`; only a property key
            // (`{ import: 1 }`) is fine.
            b"import" => next != Some(b':'),
            b"require" => next == Some(b'('),
            _ => false,
        }
    }

    /// The next byte that is not whitespace or inside a comment, without consuming anything.
    fn next_significant_byte(&self) -> Option<u8> {
        let mut probe = Scanner {
            bytes: self.bytes,
            pos: self.pos,
            prev: self.prev,
            templates: Vec::new(),
        };
        loop {
            match probe.peek(0)? {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => probe.pos += 1,
                b'/' if probe.peek(1) == Some(b'/') => probe.skip_line_comment(),
                b'/' if probe.peek(1) == Some(b'*') => probe.skip_block_comment(),
                byte => return Some(byte),
            }
        }
    }

    fn skip_line_comment(&mut self) {
        while let Some(byte) = self.peek(0) {
            if byte == b'\n' || byte == b'\r' {
                break;
            }
            self.pos += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.pos += 2;
        while let Some(byte) = self.peek(0) {
            if byte == b'*' && self.peek(1) == Some(b'/') {
                self.pos += 2;
                return;
            }
            self.pos += 1;
        }
    }

    fn skip_string(&mut self, quote: u8) {
        self.pos += 1;
        while let Some(byte) = self.peek(0) {
            self.pos += 1;
            if byte == b'\\' {
                self.pos += 1;
            } else if byte == quote || byte == b'\n' {
                return;
            }
        }
    }

    /// Skips template text up to the closing backtick or the start of a `${` substitution.
    fn skip_template_text(&mut self) {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => self.pos += 2,
                b'`' => {
                    self.pos += 1;
                    self.prev = Prev::Value;
                    return;
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    self.pos += 2;
                    self.templates.push(0);
                    self.prev = Prev::Punct;
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_regex(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let mut in_class = false;
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => self.pos += 2,
                b'\n' | b'\r' => {
                    // Not a regular expression after all (an unterminated one is a syntax error):
                    // resume right after the `/` so nothing is hidden from the scan.
                    self.pos = start + 1;
                    return;
                }
                b'[' => {
                    in_class = true;
                    self.pos += 1;
                }
                b']' => {
                    in_class = false;
                    self.pos += 1;
                }
                b'/' if !in_class => {
                    self.pos += 1;
                    // Flags.
                    while self.peek(0).is_some_and(is_identifier_byte) {
                        self.pos += 1;
                    }
                    return;
                }
                _ => self.pos += 1,
            }
        }
        self.pos = start + 1;
    }

    fn skip_number(&mut self) {
        while let Some(byte) = self.peek(0) {
            let exponent_sign = (byte == b'+' || byte == b'-')
                && self.pos > 0
                && matches!(self.bytes.get(self.pos - 1), Some(b'e' | b'E'))
                && !self
                    .bytes
                    .get(..self.pos)
                    .is_some_and(|b| b.starts_with(b"0x") || b.starts_with(b"0X"));
            if byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'_' || exponent_sign {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.prev = Prev::Value;
    }
}

/// ASCII letters, `_`, `$`, and every non-ASCII byte (identifiers may be Unicode).
fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$' || byte >= 0x80
}

#[cfg(test)]
mod tests {
    use super::check_module_access;

    fn check(source: &str, rejected: bool) {
        assert_eq!(
            check_module_access(source).is_err(),
            rejected,
            "source: {source}"
        );
    }

    #[test]
    fn rejects_every_form_of_module_access() {
        for source in [
            "import fs from 'fs';",
            "import { readFile } from 'fs'",
            "import * as x from 'y'",
            "import 'side-effect'",
            "import\n'side-effect'",
            "const m = await import('fs');",
            "const m = await import /* c */ ('fs');",
            "return import.meta.url",
            "const fs = require('fs')",
            "const fs = require ( 'fs' )",
            "const fs = require/* c */('fs')",
            "`a ${import('fs')} b`",
            "`a ${ `nested ${ import('x') }` } b`",
            "`a ${ {a: 1}.a } ${ require('x') }`",
            "x = a / b; import('y')",
            "if (a) { } import('x')",
            "return (import('x'))",
            "const r = /re/g; import('x')",
            "import",
        ] {
            check(source, true);
        }
    }

    #[test]
    fn is_not_fooled_by_text_that_mentions_modules() {
        for source in [
            "const s = 'import fs from \"fs\"'; return s;",
            "const s = \"require('fs')\";",
            "// import fs from 'fs'\nreturn 1;",
            "/* import('fs') */ return 1;",
            "const important = 1; const reimport = important; return reimport;",
            "const requireAll = 1; return requireAll;",
            "return obj.import('x');",
            "return obj?.import('x');",
            "return obj.require('x');",
            "return { import: 1, require: 2 };",
            "const r = /import\\('x'\\)/; return r.test('x');",
            "const r = /[/]import(/; return 1;",
            "return a / import_count / 2;",
            "`text import('x') require('y')`",
            "`${'import(\"x\")'}`",
            "const require = 1; return require;",
            "return typeof /import/;",
            "return x => x.import;",
            "const requireCount = 3 / 1; return 'require(';",
        ] {
            check(source, false);
        }
    }

    #[test]
    fn survives_truncated_and_binary_input() {
        for source in [
            "'unterminated",
            "`unterminated ${",
            "/* open",
            "/[",
            "\\",
            "a\\",
            "`${`${`${",
            "}}}}",
        ] {
            // Only the absence of a panic matters for these; none contains module access.
            check(source, false);
        }
    }
}
