//! The journal's one error type, and the redaction of state-store addresses.

/// What can go wrong with a journal store. `Display` never shows a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The `--state` address is not `memory`, `sqlite:PATH` or `postgres://...`.
    #[error(
        "state store `{0}` is not understood: use memory, sqlite:PATH or postgres://USER@HOST/DB"
    )]
    Address(String),
    /// The address names a store this build does not compile in (a feature of this crate is
    /// off).
    #[error(
        "state store `{address}` needs the `{feature}` feature of codemode-journal, which this build leaves out"
    )]
    NotCompiledIn {
        /// The redacted address.
        address: String,
        /// The feature that compiles the store in: `sqlite` or `postgres`.
        feature: &'static str,
    },
    /// The store could not be opened or answered with an error (the address is redacted).
    #[error("state store {address}: {message}")]
    Store {
        /// The redacted address.
        address: String,
        /// What failed, with any password in it redacted.
        message: String,
    },
    /// The store already holds the most journals it may ([`MAX_JOURNALED_RUNS`](crate::MAX_JOURNALED_RUNS)).
    #[error("too many suspended code mode runs.")]
    TooManyRuns,
    /// Another process took the run over: this writer's journal is stale.
    #[error("code mode run was taken over by another host.")]
    Fenced,
    /// A stored row could not be read back.
    #[error("state store row of run {0} is corrupt")]
    Corrupt(String),
}

/// `address` with the password of a URL's user info replaced by `***`
/// (`postgres://user:secret@host/db` -> `postgres://user:***@host/db`), and any
/// `password=` query parameter likewise.
///
/// ```
/// use codemode_journal::redact_address;
/// assert_eq!(redact_address("postgres://me:s3cret@db:5432/x"), "postgres://me:***@db:5432/x");
/// assert_eq!(redact_address("postgres://db/x?password=s3cret&a=1"), "postgres://db/x?password=***&a=1");
/// assert_eq!(redact_address("sqlite:/tmp/state.db"), "sqlite:/tmp/state.db");
/// ```
pub fn redact_address(address: &str) -> String {
    let mut out = address.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                let start = rest_start + colon + 1;
                out.replace_range(start..rest_start + at, "***");
            }
        }
    }
    redact_parameter(&out, "password=")
}

fn redact_parameter(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find(name) {
        let value_start = found + name.len();
        out.push_str(&rest[..value_start]);
        out.push_str("***");
        let value_end = rest[value_start..]
            .find(['&', ' ', '#'])
            .map_or(rest.len(), |i| value_start + i);
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

/// `message` with every occurrence of `secret` (a password) replaced by `***`.
#[cfg(feature = "postgres")]
pub(crate) fn scrub(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => message.replace(secret, "***"),
        _ => message.to_owned(),
    }
}
