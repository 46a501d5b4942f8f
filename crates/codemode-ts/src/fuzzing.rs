//! Entry points for the fuzz targets (`fuzz/`, `cargo xtask fuzz`); not part of the API.
//!
//! Hidden from the docs, with no stability promise: it hands the fuzz crate the nesting bound
//! on its own (the transform itself is public), so that a target can check that the bound
//! agrees with the transform and takes linear time. Nothing here changes what either does.

/// The pre-parse nesting bound alone: `Err` with the byte offset where the estimate crossed
/// `limit` (or the lexing got too ambiguous to bound).
pub fn nesting_bound(source: &str, limit: usize) -> Result<(), usize> {
    codemode_jslex::check_nesting(source, limit)
}
