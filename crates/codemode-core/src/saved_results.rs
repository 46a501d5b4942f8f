//! The session-scoped `results` store: values one cell saves for the cells after it, so a large
//! tool result can stay out of the model's context. Bounded in entries and bytes, held as JSON
//! text (so its host memory is what it counts), and dropped with its session.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

/// Longest key, in characters.
pub const MAX_RESULT_KEY_CHARS: usize = 128;

/// One session's saved results.
#[derive(Debug)]
pub(crate) struct SavedResults {
    entries: Mutex<Entries>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Entries {
    /// Key to JSON text, in key order.
    map: BTreeMap<String, String>,
    bytes: usize,
}

fn key_of(args: &[Value], verb: &str) -> Result<String, String> {
    let key = args
        .first()
        .and_then(Value::as_str)
        .ok_or_else(|| format!("results.{verb} needs a key string."))?;
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_RESULT_KEY_CHARS {
        return Err(format!(
            "a results key is 1 to {MAX_RESULT_KEY_CHARS} characters; this one has {chars}."
        ));
    }
    Ok(key.to_owned())
}

impl SavedResults {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: Mutex::new(Entries::default()),
            max_entries,
            max_bytes,
        }
    }

    /// `results.save(key, value)`: `{ key, bytes }`, replacing an entry of the same key.
    pub(crate) fn save(&self, args: Vec<Value>) -> Result<Value, String> {
        let key = key_of(&args, "save")?;
        let text = match args.get(1) {
            None => "null".to_owned(),
            Some(value) => serde_json::to_string(value).map_err(|error| error.to_string())?,
        };
        let bytes = text.len();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let replaced = entries.map.get(&key).map(String::len);
        let total = entries.bytes - replaced.unwrap_or(0) + bytes;
        if replaced.is_none() && entries.map.len() >= self.max_entries {
            return Err(format!(
                "the code mode results store is full: {} entries (remove one with results.delete).",
                self.max_entries
            ));
        }
        if total > self.max_bytes {
            return Err(format!(
                "the code mode results store would hold {total} bytes; its limit is {} bytes.",
                self.max_bytes
            ));
        }
        entries.bytes = total;
        entries.map.insert(key.clone(), text);
        Ok(json!({ "key": key, "bytes": bytes }))
    }

    /// `results.load(key)`: the saved value.
    pub(crate) fn load(&self, args: &[Value]) -> Result<Value, String> {
        let key = key_of(args, "load")?;
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let text = entries
            .map
            .get(&key)
            .ok_or_else(|| format!("no code mode result is saved under `{key}`."))?;
        serde_json::from_str(text).map_err(|error| error.to_string())
    }

    /// `results.delete(key)`: whether an entry was removed.
    pub(crate) fn delete(&self, args: &[Value]) -> Result<Value, String> {
        let key = key_of(args, "delete")?;
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let removed = entries.map.remove(&key);
        if let Some(text) = &removed {
            entries.bytes -= text.len();
        }
        Ok(Value::Bool(removed.is_some()))
    }

    /// `results.list()`: `[{ key, bytes }]` in key order.
    pub(crate) fn list(&self) -> Value {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        Value::Array(
            entries
                .map
                .iter()
                .map(|(key, text)| json!({ "key": key, "bytes": text.len() }))
                .collect(),
        )
    }
}
