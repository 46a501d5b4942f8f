//! `tools.search`: query terms, scoring and the result limit.

use serde_json::Value;

use crate::{CatalogEntry, CatalogError};

/// Default of `searchDefaultLimit`: results returned when the guest gives no limit.
pub const DEFAULT_SEARCH_LIMIT: usize = 8;
/// Default of `maxSearchLimit`: the most results one search returns.
pub const DEFAULT_MAX_SEARCH_LIMIT: usize = 50;
/// The highest value the `maxSearchLimit` config key may take.
pub const MAX_SEARCH_LIMIT_CEILING: usize = 50;
/// Default cap on the number of terms in one query.
///
/// Scoring costs `terms x entries` substring scans on the host, outside the
/// sandbox's time limit, so a guest must not be able to send a query of a
/// million words. A model's query is a handful of words; 64 leaves room.
pub const DEFAULT_MAX_QUERY_TERMS: usize = 64;

/// Points for a term equal to the entry's whole name or id.
const EXACT_POINTS: u32 = 20;
/// Points for a term contained in the name.
const NAME_POINTS: u32 = 8;
/// Points for a term contained in the id.
const ID_POINTS: u32 = 6;
/// Points for a term contained in the label.
const LABEL_POINTS: u32 = 4;
/// Points for a term contained in the description.
const DESCRIPTION_POINTS: u32 = 2;

/// The limits of one `tools.search` call (the config keys `searchDefaultLimit`,
/// `maxSearchLimit`), plus a cap on query terms.
///
/// They cover the number of results and the query's term count; they do not
/// cover the size of each result (descriptions are returned whole) nor the
/// query's byte length (bounded by the sandbox's bridge limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    default_limit: usize,
    max_limit: usize,
    max_query_terms: usize,
}

impl SearchLimits {
    /// Limits with `maxSearchLimit` clamped into `1..=50` and
    /// `searchDefaultLimit` clamped into `1..=maxSearchLimit`.
    ///
    /// ```
    /// use codemode_catalog::SearchLimits;
    /// let limits = SearchLimits::new(100, 20);
    /// assert_eq!((limits.default_limit(), limits.max_limit()), (20, 20));
    /// let limits = SearchLimits::new(0, 500);
    /// assert_eq!((limits.default_limit(), limits.max_limit()), (1, 50));
    /// ```
    pub fn new(default_limit: usize, max_limit: usize) -> Self {
        let max_limit = max_limit.clamp(1, MAX_SEARCH_LIMIT_CEILING);
        Self {
            default_limit: default_limit.clamp(1, max_limit),
            max_limit,
            max_query_terms: DEFAULT_MAX_QUERY_TERMS,
        }
    }

    /// The same limits with another cap on query terms (at least 1).
    pub fn with_max_query_terms(mut self, max_query_terms: usize) -> Self {
        self.max_query_terms = max_query_terms.max(1);
        self
    }

    /// Results returned when the guest omits `limit`.
    pub fn default_limit(&self) -> usize {
        self.default_limit
    }

    /// The most results one search returns.
    pub fn max_limit(&self) -> usize {
        self.max_limit
    }

    /// The most terms a query may split into; more is an error.
    pub fn max_query_terms(&self) -> usize {
        self.max_query_terms
    }

    /// The number of results for a guest-supplied `limit` option.
    ///
    /// - absent, or JSON `null` -> the default limit. `null` is how an
    ///   explicit `limit: undefined` or `limit: null` reaches the host, and
    ///   JavaScript callers treat both as "not given".
    /// - a positive integer (including an integral float such as `3.0`,
    ///   which is how a JS number may cross the bridge) -> `min(limit, max)`.
    /// - anything else (`0`, `-1`, `1.5`, `"3"`, `true`, `NaN`-like values,
    ///   arrays, objects) -> [`CatalogError::InvalidLimit`].
    ///
    /// ```
    /// use codemode_catalog::SearchLimits;
    /// use serde_json::json;
    /// let limits = SearchLimits::default();
    /// assert_eq!(limits.resolve(None), Ok(8));
    /// assert_eq!(limits.resolve(Some(&json!(3))), Ok(3));
    /// assert_eq!(limits.resolve(Some(&json!(1000))), Ok(50));
    /// assert_eq!(
    ///     limits.resolve(Some(&json!(0))).unwrap_err().to_string(),
    ///     "limit must be a positive integer."
    /// );
    /// ```
    pub fn resolve(&self, limit: Option<&Value>) -> Result<usize, CatalogError> {
        let requested = match limit {
            None | Some(Value::Null) => return Ok(self.default_limit),
            Some(Value::Number(number)) => {
                if let Some(n) = number.as_u64() {
                    n
                } else if number.is_i64() {
                    return Err(CatalogError::InvalidLimit);
                } else {
                    let float = number.as_f64().ok_or(CatalogError::InvalidLimit)?;
                    if !float.is_finite() || float.fract() != 0.0 || float < 1.0 {
                        return Err(CatalogError::InvalidLimit);
                    }
                    if float >= self.max_limit as f64 {
                        return Ok(self.max_limit);
                    }
                    // In range 1..max_limit and integral: the cast is exact.
                    float as u64
                }
            }
            Some(_) => return Err(CatalogError::InvalidLimit),
        };
        if requested == 0 {
            return Err(CatalogError::InvalidLimit);
        }
        let max = u64::try_from(self.max_limit).unwrap_or(u64::MAX);
        Ok(usize::try_from(requested.min(max)).unwrap_or(self.max_limit))
    }
}

impl Default for SearchLimits {
    /// `searchDefaultLimit` 8, `maxSearchLimit` 50, 64 query terms.
    fn default() -> Self {
        Self::new(DEFAULT_SEARCH_LIMIT, DEFAULT_MAX_SEARCH_LIMIT)
    }
}

/// One search result with its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit<'a> {
    /// The matching entry.
    pub entry: &'a CatalogEntry,
    /// Its score (1 for every entry of an empty query).
    pub score: u32,
}

/// Bit of a term found in the name.
const IN_NAME: u8 = 1;
/// Bit of a term found in the id.
const IN_ID: u8 = 1 << 1;
/// Bit of a term found in the label.
const IN_LABEL: u8 = 1 << 2;
/// Bit of a term found in the description.
const IN_DESCRIPTION: u8 = 1 << 3;
/// Bit of a term equal to the whole name or id.
const EXACT: u8 = 1 << 4;
/// Searchable fields per entry: name, id, label, description.
const FIELDS: usize = 4;
/// Ends every field in [`SearchIndex::text`]. A query term never contains
/// it, so no match can straddle two fields.
const FIELD_END: char = '\n';

/// The guest-visible entries' searchable fields, lower-cased once per
/// catalog into ONE text, so a search is a few SIMD substring scans over
/// contiguous memory instead of `terms x entries x 4` small searches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SearchIndex {
    /// For each slot: name, id, label (empty when absent), description,
    /// each lower-cased and followed by [`FIELD_END`].
    text: String,
    /// Start of every field: field `f` of slot `s` starts at
    /// `field_starts[4s + f]` and ends one byte (its [`FIELD_END`]) before
    /// the next field's start, or before the end of `text`.
    field_starts: Vec<usize>,
    /// The catalog position of each slot's entry.
    entries: Vec<usize>,
}

impl SearchIndex {
    /// The index of the guest-visible ones of `entries` (a catalog's
    /// entries, in catalog order).
    pub(crate) fn build(entries: &[CatalogEntry]) -> Self {
        let visible = || entries.iter().filter(|entry| entry.is_guest_visible());
        // Exact for ASCII text, so the text is allocated once.
        let text_bytes = visible()
            .map(|entry| {
                entry.name.len()
                    + entry.id.len()
                    + entry.label.as_ref().map_or(0, String::len)
                    + entry.description.len()
                    + FIELDS
            })
            .sum();
        let count = visible().count();
        let mut index = Self {
            text: String::with_capacity(text_bytes),
            field_starts: Vec::with_capacity(count * FIELDS),
            entries: Vec::with_capacity(count),
        };
        for (position, entry) in entries.iter().enumerate() {
            if entry.is_guest_visible() {
                index.push(position, entry);
            }
        }
        index
    }

    /// Index the guest-visible `entry` found at catalog `position`. Entries
    /// are pushed in catalog order.
    fn push(&mut self, position: usize, entry: &CatalogEntry) {
        let label = entry.label.as_deref().unwrap_or_default();
        for field in [entry.name.as_str(), &entry.id, label, &entry.description] {
            self.field_starts.push(self.text.len());
            push_lowercase(&mut self.text, field);
            self.text.push(FIELD_END);
        }
        self.entries.push(position);
    }

    /// Start of field `field`, or the text's end past the last field.
    fn field_start(&self, field: usize) -> usize {
        self.field_starts
            .get(field)
            .copied()
            .unwrap_or(self.text.len())
    }

    /// `(catalog position, score)` of every guest-visible entry scoring
    /// above 0, in catalog order. No terms: every entry scores 1.
    pub(crate) fn scores(&self, terms: &[&str]) -> Vec<(usize, u32)> {
        if terms.is_empty() {
            return self.entries.iter().map(|&position| (position, 1)).collect();
        }
        let mut scores = vec![0u32; self.entries.len()];
        let mut found = vec![0u8; self.entries.len()];
        let mut touched = Vec::new();
        for term in terms {
            self.mark(term, &mut found, &mut touched);
            for &slot in &touched {
                if let (Some(flags), Some(score)) = (found.get_mut(slot), scores.get_mut(slot)) {
                    *score = score.saturating_add(points(*flags));
                    *flags = 0;
                }
            }
            touched.clear();
        }
        self.entries
            .iter()
            .zip(scores)
            .filter(|(_, score)| *score > 0)
            .map(|(&position, score)| (position, score))
            .collect()
    }

    /// Set, per slot, the bits of the fields that contain `term`; list the
    /// slots touched. After the first match in a field the scan resumes at
    /// the field's end, so each field costs at most one match.
    fn mark(&self, term: &str, found: &mut [u8], touched: &mut Vec<usize>) {
        let finder = memchr::memmem::Finder::new(term);
        let text = self.text.as_bytes();
        let mut from = 0;
        let mut field = 0;
        while let Some(offset) = text.get(from..).and_then(|rest| finder.find(rest)) {
            let at = from + offset;
            // Advance to the field holding `at` (matches come in text order).
            while field + 1 < self.field_starts.len() && self.field_start(field + 1) <= at {
                field += 1;
            }
            let start = self.field_start(field);
            let next = self.field_start(field + 1);
            if at < start || at >= next {
                break;
            }
            let slot = field / FIELDS;
            let kind = field % FIELDS;
            let whole = at == start && next - 1 - start == term.len();
            let bits = match kind {
                0 => IN_NAME | if whole { EXACT } else { 0 },
                1 => IN_ID | if whole { EXACT } else { 0 },
                2 => IN_LABEL,
                _ => IN_DESCRIPTION,
            };
            if let Some(flags) = found.get_mut(slot) {
                if *flags == 0 {
                    touched.push(slot);
                }
                *flags |= bits;
            }
            from = next;
        }
    }
}

/// A term's points for one entry: exact name or id +20, name contains +8,
/// id contains +6, label contains +4, description contains +2 (cumulative).
fn points(flags: u8) -> u32 {
    let mut points = 0;
    if flags & EXACT != 0 {
        points += EXACT_POINTS;
    }
    if flags & IN_NAME != 0 {
        points += NAME_POINTS;
    }
    if flags & IN_ID != 0 {
        points += ID_POINTS;
    }
    if flags & IN_LABEL != 0 {
        points += LABEL_POINTS;
    }
    if flags & IN_DESCRIPTION != 0 {
        points += DESCRIPTION_POINTS;
    }
    points
}

/// Lower-case like `str::to_lowercase`, without a temporary for ASCII text.
fn push_lowercase(buffer: &mut String, text: &str) {
    let start = buffer.len();
    buffer.push_str(text);
    match buffer.get_mut(start..) {
        Some(appended) if appended.is_ascii() => appended.make_ascii_lowercase(),
        _ => {
            buffer.truncate(start);
            buffer.push_str(&text.to_lowercase());
        }
    }
}

/// The lower-cased query split on `[^a-z0-9_./:-]+`, empty pieces dropped.
///
/// Characters outside that ASCII set, including non-ASCII letters, separate
/// terms, exactly as the regular expression would.
pub(crate) fn query_terms(lowered_query: &str) -> Vec<&str> {
    lowered_query
        .split(|c: char| !is_term_char(c))
        .filter(|term| !term.is_empty())
        .collect()
}

fn is_term_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '/' | ':' | '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_limit(limit: Option<Value>, expect: Result<usize, CatalogError>) {
        let limits = SearchLimits::new(5, 20);
        assert_eq!(limits.resolve(limit.as_ref()), expect, "limit {limit:?}");
    }

    #[test]
    fn limit_rules() {
        check_limit(None, Ok(5));
        check_limit(Some(Value::Null), Ok(5));
        check_limit(Some(json!(1)), Ok(1));
        check_limit(Some(json!(7)), Ok(7));
        check_limit(Some(json!(20)), Ok(20));
        check_limit(Some(json!(21)), Ok(20));
        check_limit(Some(json!(u64::MAX)), Ok(20));
        check_limit(Some(json!(3.0)), Ok(3));
        check_limit(Some(json!(1e300)), Ok(20));
        check_limit(Some(json!(0)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(-1)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(i64::MIN)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(0.0)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(-3.0)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(1.5)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(0.5)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!("3")), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!(true)), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!([3])), Err(CatalogError::InvalidLimit));
        check_limit(Some(json!({"limit": 3})), Err(CatalogError::InvalidLimit));
    }

    #[test]
    fn limits_are_clamped_like_the_config() {
        assert_eq!(SearchLimits::new(8, 50), SearchLimits::default());
        let limits = SearchLimits::new(0, 0);
        assert_eq!((limits.default_limit(), limits.max_limit()), (1, 1));
        let limits = SearchLimits::new(30, 10);
        assert_eq!((limits.default_limit(), limits.max_limit()), (10, 10));
        let limits = SearchLimits::new(usize::MAX, usize::MAX);
        assert_eq!((limits.default_limit(), limits.max_limit()), (50, 50));
        assert_eq!(
            SearchLimits::default()
                .with_max_query_terms(0)
                .max_query_terms(),
            1
        );
    }

    #[test]
    fn terms_split_like_the_spec_regex() {
        let check = |query: &str, expect: &[&str]| {
            let lowered = query.to_lowercase();
            assert_eq!(query_terms(&lowered), expect, "query {query:?}");
        };
        check("", &[]);
        check("   ", &[]);
        check("read local file", &["read", "local", "file"]);
        check("Web_Search, fetch!!", &["web_search", "fetch"]);
        check("openclaw:core:exec", &["openclaw:core:exec"]);
        check("path/to.file-name", &["path/to.file-name"]);
        check("café crème", &["caf", "cr", "me"]);
        check("a\tb\nc", &["a", "b", "c"]);
        check("ÄÖÜ", &[]);
    }
}
