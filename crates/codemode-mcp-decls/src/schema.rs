//! JSON Schema (as MCP servers send it) -> TypeScript type text, and the schema facts calls need
//! (`default`s, `required`). Every walk is bounded by [`DeclLimits`]; nothing here trusts the
//! shape of a schema.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::ident::is_plain_property_name;
use crate::limits::DeclLimits;

/// Hard ceiling on any recursion over a schema, whatever the configured limits say.
pub(crate) const MAX_SCHEMA_DEPTH_CAP: usize = 64;

/// `$ref` hops followed when looking up a property's description or default.
const MAX_REF_HOPS: usize = 8;

/// Resolves a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`) against `root`.
fn local_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(pointer)
    }
}

/// Follows `$ref`s from `schema` (at most [`MAX_REF_HOPS`]); returns the last schema reached.
pub(crate) fn follow_refs<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..MAX_REF_HOPS {
        match current.get("$ref").and_then(Value::as_str) {
            Some(reference) => match local_ref(root, reference) {
                Some(target) => current = target,
                None => break,
            },
            None => break,
        }
    }
    current
}

/// The string entries of a schema's `required` array (others ignored).
pub(crate) fn required_names(schema: &Value) -> Vec<&str> {
    match schema.get("required") {
        Some(Value::Array(items)) => {
            let mut seen = HashSet::new();
            items
                .iter()
                .filter_map(Value::as_str)
                .filter(|name| seen.insert(*name))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The schema's `properties` object, if it is one.
fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The description of a (property) schema: its own, else that of its `$ref` target.
pub(crate) fn description<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a str> {
    schema
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| {
            follow_refs(root, schema)
                .get("description")
                .and_then(Value::as_str)
        })
        .filter(|d| !d.trim().is_empty())
}

/// The `default` of a (property) schema: its own, else that of its `$ref` target.
pub(crate) fn default_value<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    schema
        .get("default")
        .or_else(|| follow_refs(root, schema).get("default"))
}

/// Fills the `default`s of `schema`'s properties missing from `object`, and recursively inside
/// nested objects the caller supplied (down to `depth_left` levels).
pub(crate) fn fill_defaults(
    root: &Value,
    schema: &Value,
    object: &mut Map<String, Value>,
    depth_left: usize,
) {
    let schema = follow_refs(root, schema);
    let Some(props) = properties(schema) else {
        return;
    };
    for (key, prop) in props {
        match object.get_mut(key) {
            None => {
                if let Some(default) = default_value(root, prop) {
                    object.insert(key.clone(), default.clone());
                }
            }
            Some(Value::Object(inner)) if depth_left > 1 => {
                fill_defaults(root, prop, inner, depth_left - 1);
            }
            Some(_) => {}
        }
    }
}

/// One property of an object type, ready to print.
#[derive(Debug)]
pub(crate) struct Field<'a> {
    /// The property name as written in the type (bare or JSON-quoted).
    pub(crate) key: String,
    /// The property name as the schema spells it.
    pub(crate) name: &'a str,
    pub(crate) optional: bool,
    pub(crate) ty: String,
    /// The property's schema (absent for a `required` name without a property schema).
    pub(crate) schema: Option<&'a Value>,
}

/// The printable shape of an object schema.
#[derive(Debug)]
pub(crate) struct ObjectShape<'a> {
    pub(crate) fields: Vec<Field<'a>>,
    /// Type of the `[key: string]` index signature, when one is needed.
    pub(crate) index: Option<String>,
    /// `additionalProperties: false`.
    pub(crate) closed: bool,
}

impl ObjectShape<'_> {
    /// The shape as an inline type literal.
    pub(crate) fn inline(&self) -> String {
        if self.fields.is_empty() {
            return match (&self.index, self.closed) {
                (Some(index), _) => format!("Record<string, {index}>"),
                (None, true) => "Record<string, never>".to_owned(),
                (None, false) => "Record<string, unknown>".to_owned(),
            };
        }
        let mut out = String::from("{ ");
        for (i, field) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str(&field.key);
            if field.optional {
                out.push('?');
            }
            out.push_str(": ");
            out.push_str(&field.ty);
        }
        if let Some(index) = &self.index {
            out.push_str("; [key: string]: ");
            out.push_str(index);
        }
        out.push_str(" }");
        out
    }
}

/// Renders schemas of one root (a tool's input or output schema) as TypeScript types.
#[derive(Debug)]
pub(crate) struct TypeWriter<'a> {
    root: &'a Value,
    limits: &'a DeclLimits,
    max_depth: usize,
    nodes_left: usize,
    ref_stack: Vec<&'a str>,
}

impl<'a> TypeWriter<'a> {
    pub(crate) fn new(root: &'a Value, limits: &'a DeclLimits) -> Self {
        Self {
            root,
            limits,
            max_depth: limits.max_schema_depth.min(MAX_SCHEMA_DEPTH_CAP),
            nodes_left: limits.max_type_nodes,
            ref_stack: Vec::new(),
        }
    }

    /// The TypeScript type of `schema` at nesting `depth`.
    pub(crate) fn ty(&mut self, schema: &'a Value, depth: usize) -> String {
        if depth >= self.max_depth || self.nodes_left == 0 {
            return "unknown".to_owned();
        }
        self.nodes_left -= 1;
        match schema {
            Value::Bool(false) => "never".to_owned(),
            Value::Object(map) => self.object_schema(map, depth),
            _ => "unknown".to_owned(),
        }
    }

    fn object_schema(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference, depth);
        }
        let mut ty = if let Some(constant) = map.get("const") {
            literal(constant, self.limits.max_literal_chars).unwrap_or_else(|| "unknown".into())
        } else if let Some(Value::Array(members)) = map.get("enum") {
            self.enumeration(members)
        } else {
            self.composite(map, depth)
        };
        if map.get("nullable") == Some(&Value::Bool(true)) && ty != "unknown" {
            ty = union(vec![ty, "null".to_owned()]);
        }
        ty
    }

    fn reference(&mut self, reference: &'a Value, depth: usize) -> String {
        let Some(reference) = reference.as_str() else {
            return "unknown".to_owned();
        };
        if self.ref_stack.contains(&reference) {
            // A recursive type: one level is written out, the recursion is `unknown`.
            return "unknown".to_owned();
        }
        let Some(target) = local_ref(self.root, reference) else {
            return "unknown".to_owned();
        };
        self.ref_stack.push(reference);
        let ty = self.ty(target, depth + 1);
        self.ref_stack.pop();
        ty
    }

    fn enumeration(&self, members: &[Value]) -> String {
        if members.len() <= self.limits.max_union_members {
            let literals: Option<Vec<String>> = members
                .iter()
                .map(|m| literal(m, self.limits.max_literal_chars))
                .collect();
            if let Some(literals) = literals {
                return union(literals);
            }
        }
        // Too many or non-literal members: widen to the members' JSON types.
        union(
            members
                .iter()
                .map(|m| json_type_name(m).to_owned())
                .collect(),
        )
    }

    /// `type`-driven shape intersected with `allOf` members and the `anyOf`/`oneOf` union.
    fn composite(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        let mut parts = Vec::new();
        if let Some(own) = self.typed(map, depth) {
            parts.push(own);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = map.get(key) {
                let ty = if members.len() > self.limits.max_union_members {
                    "unknown".to_owned()
                } else {
                    let members = members.iter().map(|m| self.ty(m, depth + 1)).collect();
                    union(members)
                };
                parts.push(ty);
            }
        }
        if let Some(Value::Array(members)) = map.get("allOf") {
            for member in members.iter().take(self.limits.max_union_members) {
                parts.push(self.ty(member, depth + 1));
            }
        }
        intersection(parts)
    }

    /// The type named by `type` (or implied by `properties` / `items`), if any.
    fn typed(&mut self, map: &'a Map<String, Value>, depth: usize) -> Option<String> {
        let mut names: Vec<&str> = match map.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => {
                let mut seen = HashSet::new();
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|n| seen.insert(*n))
                    .take(self.limits.max_union_members)
                    .collect()
            }
            _ => Vec::new(),
        };
        if names.is_empty() {
            if [
                "properties",
                "additionalProperties",
                "patternProperties",
                "required",
            ]
            .iter()
            .any(|k| map.contains_key(*k))
            {
                names.push("object");
            } else if map.contains_key("items") || map.contains_key("prefixItems") {
                names.push("array");
            } else {
                return None;
            }
        }
        let types = names
            .into_iter()
            .map(|name| match name {
                "string" => "string".to_owned(),
                "number" | "integer" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "object" => self.object_shape(map, depth).inline(),
                "array" => self.array(map, depth),
                _ => "unknown".to_owned(),
            })
            .collect();
        Some(union(types))
    }

    fn array(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        let tuple = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(items)), _) | (None, Some(Value::Array(items))) => Some(items),
            _ => None,
        };
        if let Some(items) = tuple {
            if items.len() > self.limits.max_union_members {
                return "unknown[]".to_owned();
            }
            if items.is_empty() {
                return "unknown[]".to_owned();
            }
            let members: Vec<String> = items.iter().map(|i| self.ty(i, depth + 1)).collect();
            // Later items are not constrained by a tuple schema unless it says so.
            return format!("[{}, ...unknown[]]", members.join(", "));
        }
        match map.get("items") {
            Some(items) => {
                let item = self.ty(items, depth + 1);
                if has_top_level_operator(&item) {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            None => "unknown[]".to_owned(),
        }
    }

    /// The fields of an object schema: required ones first (schema order), then optional ones,
    /// at most `max_object_properties`, the rest covered by an index signature.
    pub(crate) fn object_shape(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> ObjectShape<'a> {
        let required: Vec<&'a str> = match map.get("required") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let required_set: HashSet<&str> = required.iter().copied().collect();

        let mut order: Vec<(&'a str, Option<&'a Value>, bool)> = Vec::new();
        if let Some(Value::Object(props)) = map.get("properties") {
            order.extend(
                props
                    .iter()
                    .filter(|(k, _)| required_set.contains(k.as_str()))
                    .map(|(k, v)| (k.as_str(), Some(v), false)),
            );
            let mut seen = HashSet::new();
            order.extend(
                required
                    .iter()
                    .filter(|name| !props.contains_key(**name) && seen.insert(**name))
                    .map(|name| (*name, None, false)),
            );
            order.extend(
                props
                    .iter()
                    .filter(|(k, _)| !required_set.contains(k.as_str()))
                    .map(|(k, v)| (k.as_str(), Some(v), true)),
            );
        } else {
            let mut seen = HashSet::new();
            order.extend(
                required
                    .iter()
                    .filter(|name| seen.insert(**name))
                    .map(|name| (*name, None, false)),
            );
        }

        let mut fields = Vec::new();
        let mut overflow = false;
        for (name, schema, optional) in order {
            if fields.len() >= self.limits.max_object_properties
                || name.chars().count() > self.limits.max_literal_chars
            {
                overflow = true;
                continue;
            }
            let key = if is_plain_property_name(name) {
                name.to_owned()
            } else {
                string_literal(name)
            };
            let ty = match schema {
                Some(schema) => self.ty(schema, depth + 1),
                None => "unknown".to_owned(),
            };
            fields.push(Field {
                key,
                name,
                optional,
                ty,
                schema,
            });
        }

        let additional = map.get("additionalProperties");
        let closed = additional == Some(&Value::Bool(false));
        let index = match additional {
            Some(schema @ Value::Object(_)) if fields.is_empty() && !overflow => {
                Some(self.ty(schema, depth + 1))
            }
            // With named properties the index signature must admit their types too.
            Some(Value::Object(_)) => Some("unknown".to_owned()),
            _ if overflow || map.contains_key("patternProperties") => Some("unknown".to_owned()),
            _ => None,
        };
        ObjectShape {
            fields,
            index,
            closed,
        }
    }
}

/// A JSON value as a TypeScript literal type, if it has one and is short enough.
pub(crate) fn literal(value: &Value, max_chars: usize) -> Option<String> {
    match value {
        Value::Null => Some("null".to_owned()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if s.chars().count() <= max_chars => Some(string_literal(s)),
        _ => None,
    }
}

/// A JSON-escaped string literal, with U+2028 / U+2029 escaped too (JSON leaves them raw; they
/// are line terminators to pre-ES2019 tooling) and `*/` written as `*\/`.
pub(crate) fn string_literal(s: &str) -> String {
    serde_json::to_string(s)
        .unwrap_or_else(|_| "\"\"".to_owned())
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        // `*\/` is the same string; generated text then never has a `*/` outside comment ends.
        .replace("*/", "*\\/")
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "unknown[]",
        Value::Object(_) => "Record<string, unknown>",
    }
}

/// `a | b | ...`, deduplicated; `unknown` absorbs everything, `never` disappears.
fn union(members: Vec<String>) -> String {
    let mut seen = HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for member in members {
        if member == "unknown" {
            return member;
        }
        if member != "never" && seen.insert(member.clone()) {
            out.push(member);
        }
    }
    match out.len() {
        0 => "never".to_owned(),
        1 => out.pop().unwrap_or_default(),
        // `&` binds tighter than `|`: members need no parentheses.
        _ => out.join(" | "),
    }
}

/// `a & b & ...`; `unknown` parts carry no information and are dropped.
fn intersection(parts: Vec<String>) -> String {
    let mut seen = HashSet::new();
    let parts: Vec<String> = parts
        .into_iter()
        .filter(|p| p != "unknown" && seen.insert(p.clone()))
        .collect();
    match parts.len() {
        0 => "unknown".to_owned(),
        1 => parts.into_iter().next().unwrap_or_default(),
        _ => parts
            .into_iter()
            .map(|p| {
                if has_top_level_operator(&p) {
                    format!("({p})")
                } else {
                    p
                }
            })
            .collect::<Vec<_>>()
            .join(" & "),
    }
}

/// Whether a type text has a `|` or `&` outside brackets and string literals, so it needs
/// parentheses before `[]` or inside an intersection.
pub(crate) fn has_top_level_operator(ty: &str) -> bool {
    let mut depth = 0i64;
    let mut in_string = false;
    let mut escaped = false;
    for c in ty.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth -= 1,
            '|' | '&' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// Nesting kept in the copies of schemas that [`McpDecls`](crate::McpDecls) stores: serde_json's
/// own parser refuses deeper documents, so only hand-built values are cut.
pub(crate) const MAX_STORED_DEPTH: usize = 128;

/// A deep copy of `value` without recursion (any depth is safe). Arrays and objects nested deeper
/// than `max_depth` are replaced by `true` (the JSON Schema that allows anything).
pub(crate) fn deep_clone(value: &Value, max_depth: usize) -> Value {
    enum Frame<'a> {
        Array(Vec<Value>, std::slice::Iter<'a, Value>),
        Object(Map<String, Value>, serde_json::map::Iter<'a>, String),
    }
    fn open<'a>(value: &'a Value, stack: &mut Vec<Frame<'a>>, max_depth: usize) -> Option<Value> {
        match value {
            Value::Array(_) | Value::Object(_) if stack.len() >= max_depth => {
                Some(Value::Bool(true))
            }
            Value::Array(items) => {
                stack.push(Frame::Array(Vec::with_capacity(items.len()), items.iter()));
                None
            }
            Value::Object(map) => {
                stack.push(Frame::Object(Map::new(), map.iter(), String::new()));
                None
            }
            scalar => Some(scalar.clone()),
        }
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut finished = open(value, &mut stack, max_depth);
    loop {
        if let Some(done) = finished.take() {
            match stack.last_mut() {
                None => return done,
                Some(Frame::Array(out, _)) => out.push(done),
                Some(Frame::Object(out, _, key)) => {
                    out.insert(std::mem::take(key), done);
                }
            }
        }
        let child = match stack.last_mut() {
            None => return Value::Null,
            Some(Frame::Array(_, items)) => items.next(),
            Some(Frame::Object(_, entries, key)) => entries.next().map(|(k, child)| {
                key.clone_from(k);
                child
            }),
        };
        finished = match child {
            Some(child) => open(child, &mut stack, max_depth),
            None => match stack.pop() {
                Some(Frame::Array(out, _)) => Some(Value::Array(out)),
                Some(Frame::Object(out, _, _)) => Some(Value::Object(out)),
                None => return Value::Null,
            },
        };
    }
}
