//! Arbitrary JSON for the targets that feed values to a boundary: nested as deep as the fuzzer
//! likes (a target bounds it where the boundary must read it back).

use arbitrary::Arbitrary;
use serde_json::{Number, Value};

#[derive(Arbitrary, Debug)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn into_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(flag) => Value::Bool(flag),
            Json::Int(number) => Value::from(number),
            Json::Float(number) => Number::from_f64(number).map_or(Value::Null, Value::Number),
            Json::Text(text) => Value::String(text),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, value.into_value()))
                    .collect(),
            ),
        }
    }
}
