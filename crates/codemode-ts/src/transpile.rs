//! The only module that talks to swc.

use std::sync::{Arc, Mutex, PoisonError};

use swc_common::errors::{DiagnosticBuilder, Emitter, HANDLER, Handler};
use swc_common::sync::Lrc;
use swc_common::{BytePos, GLOBALS, Globals, SourceMap};
use swc_ecma_ast::{EsVersion, ImportDecl, ImportSpecifier, ModuleDecl, ModuleItem};
use swc_ecma_parser::lexer::Lexer;
use swc_ecma_parser::{Parser, StringInput, Syntax, TsSyntax};
use swc_ts_fast_strip::{Mode, Options, operate};

/// One diagnostic from the parser: its message and, when it has a position,
/// the byte offset into the text that was transpiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    pub(crate) message: String,
    pub(crate) offset: Option<usize>,
}

/// A diagnostic as swc emits it: message and absolute position.
type EmittedDiagnostic = (String, Option<BytePos>);

/// Collects the diagnostics swc emits instead of printing them.
#[derive(Clone, Default)]
struct DiagnosticSink(Arc<Mutex<Vec<EmittedDiagnostic>>>);

impl Emitter for DiagnosticSink {
    fn emit(&mut self, diagnostic: &mut DiagnosticBuilder<'_>) {
        let position = diagnostic
            .span
            .primary_span()
            .filter(|span| !span.is_dummy())
            .map(|span| span.lo);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((diagnostic.message(), position));
    }
}

impl DiagnosticSink {
    fn take(&self) -> Vec<EmittedDiagnostic> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// TypeScript program text -> JavaScript program text, swc's fast-strip
/// crate in transform mode (enums, namespaces and parameter properties are
/// transformed; decorators are refused by the parser).
///
/// On failure, returns the parser's diagnostics, earliest first.
pub(crate) fn transpile_program(program: &str) -> Result<String, Vec<Diagnostic>> {
    let source_map: Lrc<SourceMap> = Lrc::default();
    let sink = DiagnosticSink::default();
    let handler = Handler::with_emitter(false, false, Box::new(sink.clone()));
    let options = Options {
        mode: Mode::Transform,
        module: Some(false),
        parser: TsSyntax {
            // Decorators are not runnable in the sandbox: let the parser
            // refuse them and report a clear message (see `cell`).
            decorators: false,
            ..TsSyntax::default()
        },
        ..Options::default()
    };
    let result = GLOBALS.set(&Globals::new(), || {
        HANDLER.set(&handler, || {
            operate(&source_map, &handler, program.to_owned(), options)
        })
    });
    match result {
        Ok(output) => Ok(output.code),
        Err(error) => {
            let start = source_map
                .files()
                .first()
                .map_or(BytePos(0), |file| file.start_pos);
            let mut diagnostics: Vec<Diagnostic> = sink
                .take()
                .into_iter()
                .map(|(message, position)| Diagnostic {
                    message,
                    offset: position
                        .and_then(|position| position.0.checked_sub(start.0))
                        .map(|offset| offset as usize),
                })
                .collect();
            if diagnostics.is_empty() {
                diagnostics.push(Diagnostic {
                    message: error.message,
                    offset: None,
                });
            }
            diagnostics.sort_by_key(|diagnostic| diagnostic.offset.unwrap_or(usize::MAX));
            Err(diagnostics)
        }
    }
}

/// Byte ranges of the top-level `import type …` declarations (and imports
/// whose every specifier is `type`) of `source`, parsed as a module.
///
/// A cell body cannot hold import declarations once wrapped in a function, so
/// these type-only imports are blanked out before wrapping. Any parse failure
/// yields no ranges: the real transform then reports the error.
pub(crate) fn type_only_import_ranges(source: &str) -> Vec<(usize, usize)> {
    const BASE: u32 = 1;
    let Ok(length) = u32::try_from(source.len()) else {
        return Vec::new();
    };
    let Some(end) = length.checked_add(BASE) else {
        return Vec::new();
    };
    let lexer = Lexer::new(
        Syntax::Typescript(TsSyntax::default()),
        EsVersion::latest(),
        StringInput::new(source, BytePos(BASE), BytePos(end)),
        None,
    );
    let mut parser = Parser::new_from(lexer);
    // Top-level `return` is a recoverable error in a module; the tree is
    // still complete, which is all this scan needs.
    let Ok(module) = parser.parse_module() else {
        return Vec::new();
    };
    module
        .body
        .iter()
        .filter_map(|item| match item {
            ModuleItem::ModuleDecl(ModuleDecl::Import(import)) if is_type_only(import) => {
                let start = import.span.lo.0.checked_sub(BASE)? as usize;
                let end = import.span.hi.0.checked_sub(BASE)? as usize;
                Some((start, end))
            }
            _ => None,
        })
        .collect()
}

fn is_type_only(import: &ImportDecl) -> bool {
    import.type_only
        || !import.specifiers.is_empty()
            && import.specifiers.iter().all(|specifier| {
                matches!(specifier, ImportSpecifier::Named(named) if named.is_type_only)
            })
}
