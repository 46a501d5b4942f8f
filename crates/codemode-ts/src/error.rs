//! The one error type of this crate.

/// Why a TypeScript cell could not be turned into JavaScript.
///
/// Every variant's `Display` starts with `typescript transform failed: `, so a
/// caller can hand the message to the model unchanged. Lines and columns are
/// the user's own (1-based; columns count Unicode scalar values), never the
/// wrapper's.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TsError {
    /// The parser rejected the cell (or the cell uses syntax a code-mode cell
    /// cannot run, such as decorators). `message` is the parser's own message.
    #[error("typescript transform failed: {message} at {line}:{column}")]
    Syntax {
        /// The parser's message, e.g. `Expression expected`.
        message: String,
        /// 1-based line in the user's source.
        line: usize,
        /// 1-based column in the user's source, in Unicode scalar values.
        column: usize,
    },
    /// The source is larger than [`TransformOptions::max_source_bytes`](crate::TransformOptions).
    #[error(
        "typescript transform failed: source is {actual} bytes, more than the limit of {limit} bytes"
    )]
    SourceTooLarge {
        /// Size of the rejected source in bytes.
        actual: usize,
        /// The configured limit in bytes.
        limit: usize,
    },
    /// The source nests deeper than [`TransformOptions::max_nesting_depth`](crate::TransformOptions)
    /// (brackets plus unbracketed operator chains, bounded before parsing), or
    /// its lexing is too ambiguous to bound (rare; see that option).
    #[error("typescript transform failed: nesting deeper than {limit} levels at {line}:{column}")]
    NestingTooDeep {
        /// The configured limit.
        limit: usize,
        /// 1-based line where the limit was crossed.
        line: usize,
        /// 1-based column where the limit was crossed, in Unicode scalar values.
        column: usize,
    },
    /// The transformer failed in a way that is not the cell's syntax: it
    /// panicked, its thread could not be started, or its output did not have
    /// the expected shape. Never a silently wrong result.
    #[error("typescript transform failed: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}
