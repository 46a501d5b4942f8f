//! The catalog's one error type.

use thiserror::Error;

/// How many candidate ids an [`CatalogError::AmbiguousName`] message lists.
const LISTED_CANDIDATES: usize = 5;

/// What can go wrong when the guest looks up or searches the catalog.
///
/// The `Display` text is meant to be shown to guest code as is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// No guest-visible entry has this id or name (denied, MCP-only and
    /// never-registered tools all look the same).
    #[error("Unknown tool id: {0}")]
    UnknownTool(String),
    /// A bare name matched several guest-visible entries; the caller must use
    /// the exact id.
    #[error("Ambiguous tool name: {name} matches {}; use the exact id.", list_candidates(.candidates))]
    AmbiguousName {
        /// The name that was looked up.
        name: String,
        /// Ids of every entry with that name, in catalog order.
        candidates: Vec<String>,
    },
    /// A host source name ([`HostSource::new`](crate::HostSource::new)) that ids cannot
    /// carry.
    #[error("invalid catalog source name {name:?}: {reason}")]
    InvalidSourceName {
        /// The refused name (its first 40 characters).
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The search `limit` was present but not a positive integer.
    #[error("limit must be a positive integer.")]
    InvalidLimit,
    /// The search query splits into more terms than
    /// [`SearchLimits::max_query_terms`](crate::SearchLimits::max_query_terms).
    #[error("search query has too many terms ({terms}; at most {max}).")]
    TooManyQueryTerms {
        /// Terms in the query.
        terms: usize,
        /// The configured maximum.
        max: usize,
    },
}

fn list_candidates(candidates: &[String]) -> String {
    let shown: Vec<&str> = candidates
        .iter()
        .take(LISTED_CANDIDATES)
        .map(String::as_str)
        .collect();
    let mut text = shown.join(", ");
    if candidates.len() > LISTED_CANDIDATES {
        text.push_str(&format!(
            " and {} more",
            candidates.len() - LISTED_CANDIDATES
        ));
    }
    text
}
