//! The read-only virtual file table behind `API.list` / `API.read`.

use serde::{Serialize, Serializer};

use crate::DeclError;
use crate::error::quoted;

/// The folder every MCP declaration file lives in.
pub(crate) const ROOT: &str = "mcp";

/// Longest path [`validate_path`] looks at.
const MAX_PATH_BYTES: usize = 1_024;

/// One generated declaration file.
///
/// Serializes as the guest's file-table row `{path, description, bytes, text}` (`bytes` = UTF-8
/// length of `text`), so the core can ship the whole table into the VM and answer `API.list` /
/// `API.read` there without a bridge call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualFile {
    /// `mcp/index.d.ts` or `mcp/<serverIdent>.d.ts`.
    pub path: String,
    /// One line saying what the file declares.
    pub description: String,
    /// The TypeScript declaration text.
    pub text: String,
}

impl VirtualFile {
    /// The file's `API.list` row.
    pub fn info(&self) -> FileInfo {
        FileInfo {
            path: self.path.clone(),
            description: self.description.clone(),
            bytes: self.text.len(),
        }
    }
}

impl Serialize for VirtualFile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row<'a> {
            path: &'a str,
            description: &'a str,
            bytes: usize,
            text: &'a str,
        }
        Row {
            path: &self.path,
            description: &self.description,
            bytes: self.text.len(),
            text: &self.text,
        }
        .serialize(serializer)
    }
}

/// One `API.list` row: `{path, description, bytes}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileInfo {
    /// The file's path, as `API.read` takes it.
    pub path: String,
    /// One line saying what the file declares.
    pub description: String,
    /// The file's size in UTF-8 bytes.
    pub bytes: usize,
}

/// Checks that `path` is a relative, normalised virtual path: not empty, not absolute, no empty,
/// `.` or `..` segments, no backslashes or control characters. Returns it without one trailing
/// `/`.
pub(crate) fn validate_path(path: &str) -> Result<&str, DeclError> {
    let invalid = |reason| DeclError::InvalidPath {
        path: quoted(path),
        reason,
    };
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid("the path is too long"));
    }
    if path.is_empty() {
        return Err(invalid("the path is empty"));
    }
    if path.starts_with('/') || path.starts_with('~') || path.get(1..2) == Some(":") {
        return Err(invalid(
            "absolute paths are not allowed; paths start with \"mcp/\"",
        ));
    }
    if path.contains('\\') {
        return Err(invalid("backslashes are not allowed; use \"/\""));
    }
    if path.chars().any(char::is_control) {
        return Err(invalid("control characters are not allowed"));
    }
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    for segment in trimmed.split('/') {
        match segment {
            "" => return Err(invalid("empty path segments (\"//\") are not allowed")),
            "." | ".." => return Err(invalid("\".\" and \"..\" segments are not allowed")),
            _ => {}
        }
    }
    Ok(trimmed)
}
