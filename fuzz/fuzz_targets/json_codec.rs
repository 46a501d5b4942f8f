//! The bridge's JSON codec: host values to JSON text for the guest (refused past
//! `MAX_JSON_DEPTH` levels, checked and dropped without recursion) and guest JSON text to values.
//! A value is built from a list of operations without recursion, so it can nest far deeper
//! than the bound (`Wrap` opens thousands of levels at once). The encoder must refuse exactly
//! the values deeper than the bound, with its error and never a stack overflow; what it accepts
//! must decode back to the same value; guest text the decoder accepts must be within the bound
//! and survive the same round trip.
#![no_main]

use arbitrary::Arbitrary;
use codemode_sandbox::MAX_JSON_DEPTH;
use codemode_sandbox::fuzzing::{encode_host_value, parse_bridge_json};
use codemode_sandbox::json_nests_deeper_than;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};

#[derive(Arbitrary, Debug)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Unsigned(u64),
    Float(f64),
    Text(String),
}

impl Scalar {
    fn into_value(self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(flag) => Value::Bool(flag),
            Scalar::Int(number) => Value::from(number),
            Scalar::Unsigned(number) => Value::from(number),
            Scalar::Float(number) => Number::from_f64(number).map_or(Value::Null, Value::Number),
            Scalar::Text(text) => Value::String(text),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Open an array (its key, when the parent is an object).
    Array(String),
    /// Open an object.
    Object(String),
    /// Add a scalar to the open container.
    Scalar(String, Scalar),
    /// Close the open container.
    Close,
    /// Open this many arrays at once (modulo `MAX_WRAP`).
    Wrap(u16),
}

/// Most levels one `Wrap` opens: a few of them nest far past the bound, and an input stays fast.
const MAX_WRAP: usize = 4096;

#[derive(Arbitrary, Debug)]
struct Case {
    ops: Vec<Op>,
    /// Guest text for the decoder.
    text: String,
}

/// One open container while building: its key in the parent, the container, and the deepest
/// nesting of what it holds so far.
struct Frame {
    key: String,
    value: Value,
    depth: usize,
}

impl Frame {
    fn new(key: String, value: Value) -> Self {
        Frame {
            key,
            value,
            depth: 1,
        }
    }

    /// Adds `child` (of `depth` levels) under `key`; a duplicate key keeps the first child.
    fn add(&mut self, key: String, child: Value, depth: usize) {
        match &mut self.value {
            Value::Array(items) => items.push(child),
            Value::Object(map) if !map.contains_key(&key) => {
                map.insert(key, child);
            }
            _ => {
                // Dropped without recursion: it may be deep.
                let _ = encode_host_value(wrap_deep(child));
                return;
            }
        }
        self.depth = self.depth.max(depth + 1);
    }
}

/// `value` nested past the bound for sure, so that the encoder dismantles it.
fn wrap_deep(mut value: Value) -> Value {
    for _ in 0..=MAX_JSON_DEPTH {
        value = Value::Array(vec![value]);
    }
    value
}

/// Closes the top frame into its parent; `None` when it is the root.
fn close(stack: &mut Vec<Frame>) -> Option<()> {
    if stack.len() < 2 {
        return None;
    }
    let frame = stack.pop()?;
    stack.last_mut()?.add(frame.key, frame.value, frame.depth);
    Some(())
}

fn scalar_depth(value: &Value) -> usize {
    usize::from(matches!(value, Value::Array(_) | Value::Object(_)))
}

fuzz_target!(|case: Case| {
    let mut stack = vec![Frame::new(String::new(), Value::Array(Vec::new()))];
    for op in case.ops {
        match op {
            Op::Array(key) => stack.push(Frame::new(key, Value::Array(Vec::new()))),
            Op::Object(key) => stack.push(Frame::new(key, Value::Object(Map::new()))),
            Op::Scalar(key, scalar) => {
                let value = scalar.into_value();
                let depth = scalar_depth(&value);
                if let Some(top) = stack.last_mut() {
                    top.add(key, value, depth);
                }
            }
            Op::Close => {
                let _ = close(&mut stack);
            }
            Op::Wrap(levels) => {
                for _ in 0..usize::from(levels) % MAX_WRAP {
                    stack.push(Frame::new(String::new(), Value::Array(Vec::new())));
                }
            }
        }
    }
    while close(&mut stack).is_some() {}
    let Some(root) = stack.pop() else {
        return;
    };
    let too_deep = root.depth > MAX_JSON_DEPTH;
    let copy = (!too_deep).then(|| root.value.clone());
    match (encode_host_value(root.value), copy) {
        (Err(message), None) => assert!(message.contains("nests deeper"), "{message}"),
        (Ok(text), Some(copy)) => match parse_bridge_json(&text) {
            Ok(back) => assert!(back == copy, "{text} decodes as {back}"),
            Err(message) => panic!("{} levels encode but do not decode: {message}", root.depth),
        },
        (Err(message), Some(_)) => panic!("{} levels refused: {message}", root.depth),
        (Ok(_), None) => panic!("{} levels accepted", root.depth),
    }

    if let Ok(value) = parse_bridge_json(&case.text) {
        assert!(!json_nests_deeper_than(&value, MAX_JSON_DEPTH));
        let text = encode_host_value(value.clone()).expect("a decoded value encodes");
        let back = parse_bridge_json(&text).expect("an encoded value decodes");
        assert!(back == value, "{text} decodes as {back}");
    }
});
