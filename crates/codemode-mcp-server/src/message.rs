//! The screening of every incoming JSON-RPC message, over HTTP and stdio, before rmcp sees it:
//! a message rmcp reads passes as it is; anything else gets the JSON-RPC error it deserves,
//! which rmcp would not give (over HTTP it answers 415 with plain text, over stdio it says
//! nothing to text that is not JSON or too long).
//!
//! - text that is not JSON: parse error `-32700`, `id: null`;
//! - JSON that is not one request object (a batch, a bare value, a wrong `jsonrpc`, an id that
//!   is neither a string nor an integer within 64 bits, no `method`): invalid request `-32600`,
//!   with the message's id when it has a valid one, else `id: null`;
//! - a request whose parameters do not fit its method: invalid params `-32602`, with its id;
//! - a notification or a response that does not parse: nothing is answered over stdio (JSON-RPC
//!   never answers those), `-32600` over HTTP (a request always gets an answer).

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Map, Value, json};

/// JSON-RPC's parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A malformed message: the error to answer, and whether a stream transport answers it.
#[derive(Debug)]
pub(crate) struct Refusal {
    /// The JSON-RPC error response.
    pub(crate) response: Value,
    /// `false` for a notification or a response: JSON-RPC answers neither.
    pub(crate) answered: bool,
}

/// A JSON-RPC error response.
pub(crate) fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// A valid JSON-RPC id for rmcp: a string, or an integer within 64 bits.
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

/// The message rmcp reads from `bytes`, or the error to answer instead.
pub(crate) fn screen(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Refusal> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let rmcp_error = match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(message) => return Ok(message),
        Err(error) => error,
    };
    let refuse = |id: Value, code, message: String| Refusal {
        response: error_response(id, code, &message),
        answered: true,
    };
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value,
        Err(error) => {
            return Err(refuse(
                Value::Null,
                PARSE_ERROR,
                format!("parse error: the message is not JSON ({error})"),
            ));
        }
    };
    let Value::Object(object) = value else {
        let what = if value.is_array() {
            "a batch; this server takes one JSON-RPC object per message"
        } else {
            "not a JSON-RPC object"
        };
        return Err(refuse(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: the message is {what}"),
        ));
    };
    Err(classify(&object, &rmcp_error))
}

/// Why a JSON object rmcp does not read is refused.
fn classify(object: &Map<String, Value>, rmcp_error: &serde_json::Error) -> Refusal {
    let id = object.get("id");
    let echoed = id.filter(|id| valid_id(id)).cloned().unwrap_or(Value::Null);
    let refuse = |id: Value, code, message: String| Refusal {
        response: error_response(id, code, &message),
        answered: true,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            echoed,
            INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"".to_owned(),
        );
    }
    if id.is_some_and(|id| !valid_id(id)) {
        return refuse(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an id is a string or an integer within 64 bits".to_owned(),
        );
    }
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(_)) => refuse(
            echoed,
            INVALID_PARAMS,
            format!("invalid params for `{method}`: {rmcp_error}"),
        ),
        (Some(Value::String(_)), None) => Refusal {
            response: error_response(
                Value::Null,
                INVALID_REQUEST,
                &format!("invalid request: a malformed notification ({rmcp_error})"),
            ),
            answered: false,
        },
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Refusal {
                response: error_response(
                    Value::Null,
                    INVALID_REQUEST,
                    &format!("invalid request: a malformed response ({rmcp_error})"),
                ),
                answered: false,
            }
        }
        _ => refuse(
            echoed,
            INVALID_REQUEST,
            "invalid request: a request needs a string `method`".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> (i64, Value, bool) {
        let refusal = screen(text.as_bytes()).expect_err(text);
        (
            refusal.response["error"]["code"]
                .as_i64()
                .unwrap_or_default(),
            refusal.response["id"].clone(),
            refusal.answered,
        )
    }

    #[test]
    fn every_malformed_message_gets_its_error() {
        let cases: [(&str, i64, Value, bool); 10] = [
            ("{not json", PARSE_ERROR, Value::Null, true),
            ("", PARSE_ERROR, Value::Null, true),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                INVALID_REQUEST,
                Value::Null,
                true,
            ),
            ("null", INVALID_REQUEST, Value::Null, true),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
                true,
            ),
            (
                r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
                INVALID_REQUEST,
                json!(7),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","oops":true}"#,
                INVALID_REQUEST,
                json!("x"),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":7}"#,
                INVALID_PARAMS,
                json!(3),
                true,
            ),
        ];
        for (text, code, id, answered) in cases {
            assert_eq!(refused(text), (code, id, answered), "{text}");
        }
        assert!(screen(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
        assert!(
            screen(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}").is_ok()
        );
    }
}
