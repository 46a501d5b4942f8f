//! The language of a code cell, as `tools.codeMode.languages` and the `exec` input name it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The language of a code cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Plain JavaScript: evaluated as is, never touches the TypeScript transform.
    Javascript,
    /// TypeScript: types stripped (and enums/namespaces transformed) before evaluation.
    Typescript,
}

impl Language {
    /// `"javascript"` or `"typescript"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Javascript => "javascript",
            Language::Typescript => "typescript",
        }
    }

    /// Parses the exact wire name.
    pub fn parse(name: &str) -> Option<Language> {
        match name {
            "javascript" => Some(Language::Javascript),
            "typescript" => Some(Language::Typescript),
            _ => None,
        }
    }
}
