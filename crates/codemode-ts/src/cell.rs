//! A cell body wrapped as an async function for the transform, and unwrapped
//! again afterwards.
//!
//! The cell is the *body* of an async function (top-level `await` and
//! `return`), which the TypeScript parser only accepts inside a function. So
//! the body becomes
//!
//! ```text
//! async function __codemode_cell_K() { __codemode_body_K: {
//! <user source, unchanged>
//! ;break __codemode_body_K; } }
//! ```
//!
//! with the header alone on line 1 (user line = reported line - 1) and `K`
//! the smallest number for which neither name occurs in the source. The
//! labelled block makes unwrapping sound: the printed `break` can only refer
//! to the header's label, so if the output is exactly "header, statements,
//! that `break`, footer" with the label printed exactly twice, the statements
//! are the user's body and nothing escaped the wrapper (a cell such as
//! `} } function f() { {` fails with a clear error instead).

use std::borrow::Cow;

use crate::TsError;
use crate::position::LineColumn;
use crate::transpile::{Diagnostic, transpile_program, type_only_import_ranges};

/// The names that wrap one cell.
pub(crate) struct CellWrapper {
    function: String,
    label: String,
}

/// Message given when the parser stops at a decorator's `@`.
const DECORATOR_MESSAGE: &str = "decorators are not supported in code-mode cells";

/// Message given when a `}` of the cell closes the wrapper's block.
const UNBALANCED_MESSAGE: &str = "unbalanced `}`: the cell closes more braces than it opens";

impl CellWrapper {
    /// Choose wrapper names that do not occur in `source`.
    pub(crate) fn for_source(source: &str) -> CellWrapper {
        let mut index = 0u64;
        loop {
            let function = format!("__codemode_cell_{index}");
            let label = format!("__codemode_body_{index}");
            if !source.contains(&function) && !source.contains(&label) {
                return CellWrapper { function, label };
            }
            index += 1;
        }
    }

    fn wrap(&self, body: &str) -> String {
        let mut program = String::with_capacity(body.len() + 2 * self.label.len() + 64);
        program.push_str(&format!(
            "async function {}() {{ {}: {{\n",
            self.function, self.label
        ));
        program.push_str(body);
        program.push_str(&format!("\n;break {}; }} }}", self.label));
        program
    }

    /// Transform one cell body: erase type-only imports, wrap, transpile,
    /// map diagnostics back to the user's positions, unwrap.
    ///
    /// `source` has passed the nesting bound; the body without its type-only
    /// imports (which lexes differently around them) must pass it too.
    pub(crate) fn transform(
        &self,
        source: &str,
        max_nesting_depth: usize,
    ) -> Result<String, TsError> {
        let body = erase_type_only_imports(source);
        if let Cow::Owned(erased) = &body {
            crate::check_nesting(erased, max_nesting_depth)?;
        }
        let program = self.wrap(&body);
        let output = transpile_program(&program)
            .map_err(|diagnostics| self.syntax_error(source, &program, &diagnostics))?;
        self.unwrap(&output)
    }

    /// The earliest diagnostic, at the user's line and column.
    fn syntax_error(&self, source: &str, program: &str, diagnostics: &[Diagnostic]) -> TsError {
        let Some(first) = diagnostics.first() else {
            return TsError::Internal {
                message: "the parser failed without a diagnostic".to_owned(),
            };
        };
        let body_start = program.find('\n').map_or(0, |newline| newline + 1);
        let body_end = body_start + source.len();
        let (position, message) = match first.offset {
            Some(offset) if offset < body_start => (LineColumn { line: 1, column: 1 }, None),
            Some(offset) if offset < body_end => {
                let at_decorator = program.as_bytes().get(offset) == Some(&b'@');
                (
                    LineColumn::of_offset(source, offset - body_start),
                    at_decorator.then_some(DECORATOR_MESSAGE),
                )
            }
            // The footer's `break` lost its label: a `}` in the cell closed
            // the wrapper's block early.
            Some(_) if first.message.contains("'break'") => {
                (LineColumn::end_of(source), Some(UNBALANCED_MESSAGE))
            }
            // In the footer or without position: the error is at the end of
            // the user's text (an unclosed bracket, string or comment).
            _ => (LineColumn::end_of(source), None),
        };
        TsError::Syntax {
            message: message.map_or_else(|| first.message.clone(), str::to_owned),
            line: position.line,
            column: position.column,
        }
    }

    /// Recover the body from the printed function, checking its shape.
    fn unwrap(&self, output: &str) -> Result<String, TsError> {
        let header = format!(
            "async function {}() {{\n    {}: {{\n",
            self.function, self.label
        );
        let footer = "    }\n}\n";
        let shape_error = |what: &str| TsError::Internal {
            message: format!(
                "unexpected transform output ({what}); the cell may use the reserved names {} or {}",
                self.function, self.label
            ),
        };
        if output.matches(&self.label).count() != 2 {
            return Err(shape_error(
                "the wrapper label is not printed exactly twice",
            ));
        }
        let inner = output
            .strip_prefix(&header)
            .and_then(|rest| rest.strip_suffix(footer))
            .ok_or_else(|| shape_error("the wrapper header or footer is missing"))?;
        let break_line = format!("        break {};\n", self.label);
        let break_start = if inner.starts_with(&break_line) {
            0
        } else {
            inner
                .find(&format!("\n{break_line}"))
                .map(|newline| newline + 1)
                .ok_or_else(|| shape_error("the wrapper break is not on its own line"))?
        };
        let (before, rest) = inner.split_at(break_start);
        let after = rest.get(break_line.len()..).unwrap_or_default();
        // The `;` that guards the break against a dangling user statement.
        let before = before.strip_suffix("        ;\n").unwrap_or(before);
        let mut body = String::with_capacity(before.len() + after.len());
        body.push_str(before);
        body.push_str(after);
        Ok(body)
    }
}

/// The source with its type-only import declarations replaced by spaces
/// (line breaks kept, one space per character, so positions do not move).
fn erase_type_only_imports(source: &str) -> Cow<'_, str> {
    if !source.contains("import") {
        return Cow::Borrowed(source);
    }
    let ranges = type_only_import_ranges(source);
    if ranges.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut erased = String::with_capacity(source.len());
    let mut copied = 0;
    for (start, end) in ranges {
        let (Some(kept), Some(import)) = (source.get(copied..start), source.get(start..end)) else {
            continue;
        };
        erased.push_str(kept);
        erased.extend(import.chars().map(|character| match character {
            '\n' | '\r' => character,
            _ => ' ',
        }));
        copied = end;
    }
    erased.push_str(source.get(copied..).unwrap_or_default());
    Cow::Owned(erased)
}
