//! Checking that a text is a TypeScript declaration file (`.d.ts`), for crates that generate
//! declarations (`codemode-mcp-decls`) without knowing swc themselves.

use swc_common::{BytePos, Spanned};
use swc_ecma_parser::{Parser, StringInput, Syntax, TsSyntax};

use crate::TsError;
use crate::position::LineColumn;

/// Parses `source` as a TypeScript declaration file (`.d.ts` mode, as a module) and returns the
/// number of top-level statements. Any diagnostic, fatal or recovered, is an error with the
/// line and column of `source`. The size and nesting guards of [`crate::TransformOptions`]
/// apply first, and the parser runs on a transform thread (like [`crate::transform`]), so
/// hostile text cannot overflow the parser's stack, nor the caller's.
///
/// ```
/// assert_eq!(codemode_ts::check_declaration_file("declare namespace MCP { function f(): void; }")?, 1);
/// let error = codemode_ts::check_declaration_file("declare namespace MCP {\n  function (: void;\n}").unwrap_err();
/// assert!(error.to_string().contains(" at 2:"));
/// # Ok::<(), codemode_ts::TsError>(())
/// ```
pub fn check_declaration_file(source: &str) -> Result<usize, TsError> {
    let options = crate::TransformOptions::default();
    crate::check_size(source, &options)?;
    let source = source.to_owned();
    crate::threads::transform_threads().run_blocking(move || {
        crate::check_nesting(&source, options.max_nesting_depth)?;
        parse_declaration_file(&source, &options)
    })
}

/// [`check_declaration_file`] on the current thread (a transform thread), after the guards.
fn parse_declaration_file(
    source: &str,
    options: &crate::TransformOptions,
) -> Result<usize, TsError> {
    const BASE: u32 = 1;
    let end = u32::try_from(source.len())
        .ok()
        .and_then(|length| length.checked_add(BASE))
        .ok_or(TsError::SourceTooLarge {
            actual: source.len(),
            limit: options.max_source_bytes,
        })?;
    let syntax = Syntax::Typescript(TsSyntax {
        dts: true,
        ..TsSyntax::default()
    });
    let mut parser = Parser::new(
        syntax,
        StringInput::new(source, BytePos(BASE), BytePos(end)),
        None,
    );
    let syntax_error = |span_lo: BytePos, message: String| {
        let offset = span_lo.0.saturating_sub(BASE) as usize;
        let position = LineColumn::of_offset(source, offset);
        TsError::Syntax {
            message,
            line: position.line,
            column: position.column,
        }
    };
    let module = parser
        .parse_module()
        .map_err(|error| syntax_error(error.span().lo, error.kind().msg().into_owned()))?;
    if let Some(error) = parser.take_errors().into_iter().next() {
        return Err(syntax_error(
            error.span().lo,
            error.kind().msg().into_owned(),
        ));
    }
    Ok(module.body.len())
}
