//! JSON Schema (as MCP servers send it) -> TypeScript type text, and the schema facts calls need
//! (`default`s, `required`). Every walk is bounded by [`DeclLimits`]; nothing here trusts the
//! shape of a schema.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::ident::is_plain_property_name;
use crate::limits::DeclLimits;

/// A rendered type: most are fixed words (`string`, `unknown`), so they are not allocated.
pub(crate) type Ty = Cow<'static, str>;

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

/// The `description` and `default` of a (property) schema: its own, else its `$ref` target's.
pub(crate) fn doc_facts<'a>(
    root: &'a Value,
    schema: &'a Value,
) -> (Option<&'a str>, Option<&'a Value>) {
    let (mut description, mut default, mut reference) = (None, None, None);
    if let Value::Object(map) = schema {
        // One pass: each `get` on a schema object costs a SipHash.
        for (key, value) in map {
            match key.as_str() {
                "description" => description = value.as_str(),
                "default" => default = Some(value),
                "$ref" => reference = Some(value),
                _ => {}
            }
        }
    }
    if reference.is_some() && (description.is_none() || default.is_none()) {
        let target = follow_refs(root, schema);
        description = description.or_else(|| target.get("description").and_then(Value::as_str));
        default = default.or_else(|| target.get("default"));
    }
    (description.filter(|d| !d.trim().is_empty()), default)
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
    pub(crate) ty: Ty,
    /// The property's schema (absent for a `required` name without a property schema).
    pub(crate) schema: Option<&'a Value>,
}

/// The printable shape of an object schema.
#[derive(Debug)]
pub(crate) struct ObjectShape<'a> {
    pub(crate) fields: Vec<Field<'a>>,
    /// Type of the `[key: string]` index signature, when one is needed.
    pub(crate) index: Option<Ty>,
    /// `additionalProperties: false`.
    pub(crate) closed: bool,
}

impl ObjectShape<'_> {
    /// The shape as an inline type literal.
    pub(crate) fn inline(&self) -> Ty {
        if self.fields.is_empty() {
            return match (&self.index, self.closed) {
                (Some(index), _) => Ty::Owned(format!("Record<string, {index}>")),
                (None, true) => Ty::Borrowed("Record<string, never>"),
                (None, false) => Ty::Borrowed("Record<string, unknown>"),
            };
        }
        let mut out = String::with_capacity(24 * self.fields.len() + 8);
        out.push_str("{ ");
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
        Ty::Owned(out)
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

/// The keywords of one schema object that rendering looks at, found in one pass over its
/// entries (one pass over a small `BTreeMap` beats one lookup per keyword).
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a Value>,
    constant: Option<&'a Value>,
    enumeration: Option<&'a Value>,
    nullable: bool,
    any_of: Option<&'a Value>,
    one_of: Option<&'a Value>,
    all_of: Option<&'a Value>,
    ty: Option<&'a Value>,
    properties: Option<&'a Value>,
    required: Option<&'a Value>,
    additional: Option<&'a Value>,
    pattern_properties: bool,
    items: Option<&'a Value>,
    prefix_items: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    fn of(map: &'a Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        for (key, value) in map {
            match key.as_str() {
                "$ref" => k.reference = Some(value),
                "const" => k.constant = Some(value),
                "enum" => k.enumeration = Some(value),
                "nullable" => k.nullable = value == &Value::Bool(true),
                "anyOf" => k.any_of = Some(value),
                "oneOf" => k.one_of = Some(value),
                "allOf" => k.all_of = Some(value),
                "type" => k.ty = Some(value),
                "properties" => k.properties = Some(value),
                "required" => k.required = Some(value),
                "additionalProperties" => k.additional = Some(value),
                "patternProperties" => k.pattern_properties = true,
                "items" => k.items = Some(value),
                "prefixItems" => k.prefix_items = Some(value),
                _ => {}
            }
        }
        k
    }

    fn implies_object(&self) -> bool {
        self.properties.is_some()
            || self.additional.is_some()
            || self.pattern_properties
            || self.required.is_some()
    }
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
    pub(crate) fn ty(&mut self, schema: &'a Value, depth: usize) -> Ty {
        if depth >= self.max_depth || self.nodes_left == 0 {
            return Ty::Borrowed("unknown");
        }
        self.nodes_left -= 1;
        match schema {
            Value::Bool(false) => Ty::Borrowed("never"),
            Value::Object(map) => self.object_schema(&Keywords::of(map), depth),
            _ => Ty::Borrowed("unknown"),
        }
    }

    fn object_schema(&mut self, k: &Keywords<'a>, depth: usize) -> Ty {
        if let Some(reference) = k.reference {
            return self.reference(reference, depth);
        }
        let mut ty = if let Some(constant) = k.constant {
            literal(constant, self.limits.max_literal_chars)
                .map_or(Ty::Borrowed("unknown"), Ty::Owned)
        } else if let Some(Value::Array(members)) = k.enumeration {
            self.enumeration(members)
        } else {
            self.composite(k, depth)
        };
        if k.nullable && ty != "unknown" {
            ty = union(vec![ty, Ty::Borrowed("null")]);
        }
        ty
    }

    fn reference(&mut self, reference: &'a Value, depth: usize) -> Ty {
        let Some(reference) = reference.as_str() else {
            return Ty::Borrowed("unknown");
        };
        if self.ref_stack.contains(&reference) {
            // A recursive type: one level is written out, the recursion is `unknown`.
            return Ty::Borrowed("unknown");
        }
        let Some(target) = local_ref(self.root, reference) else {
            return Ty::Borrowed("unknown");
        };
        self.ref_stack.push(reference);
        let ty = self.ty(target, depth + 1);
        self.ref_stack.pop();
        ty
    }

    fn enumeration(&self, members: &[Value]) -> Ty {
        if members.len() <= self.limits.max_union_members {
            let literals: Option<Vec<Ty>> = members
                .iter()
                .map(|m| literal(m, self.limits.max_literal_chars).map(Ty::Owned))
                .collect();
            if let Some(literals) = literals {
                return union(literals);
            }
        }
        // Too many or non-literal members: widen to the members' JSON types.
        union(
            members
                .iter()
                .map(|m| Ty::Borrowed(json_type_name(m)))
                .collect(),
        )
    }

    /// `type`-driven shape intersected with `allOf` members and the `anyOf`/`oneOf` union.
    fn composite(&mut self, k: &Keywords<'a>, depth: usize) -> Ty {
        if k.any_of.is_none() && k.one_of.is_none() && k.all_of.is_none() {
            // The common case: no combinators, nothing to intersect.
            return self.typed(k, depth).unwrap_or(Ty::Borrowed("unknown"));
        }
        let mut parts = Vec::new();
        if let Some(own) = self.typed(k, depth) {
            parts.push(own);
        }
        for members in [k.any_of, k.one_of].into_iter().flatten() {
            if let Value::Array(members) = members {
                let ty = if members.len() > self.limits.max_union_members {
                    Ty::Borrowed("unknown")
                } else {
                    let members = members.iter().map(|m| self.ty(m, depth + 1)).collect();
                    union(members)
                };
                parts.push(ty);
            }
        }
        if let Some(Value::Array(members)) = k.all_of {
            for member in members.iter().take(self.limits.max_union_members) {
                parts.push(self.ty(member, depth + 1));
            }
        }
        intersection(parts)
    }

    /// The type named by `type` (or implied by `properties` / `items`), if any.
    fn typed(&mut self, k: &Keywords<'a>, depth: usize) -> Option<Ty> {
        let mut names: Vec<&str> = match k.ty {
            Some(Value::String(name)) => return Some(self.named(name, k, depth)),
            Some(Value::Array(names)) => {
                let mut seen: Vec<&str> = Vec::new();
                for name in names.iter().filter_map(Value::as_str) {
                    if !seen.contains(&name) && seen.len() < self.limits.max_union_members {
                        seen.push(name);
                    }
                }
                seen
            }
            _ => Vec::new(),
        };
        if names.is_empty() {
            if k.implies_object() {
                names.push("object");
            } else if k.items.is_some() || k.prefix_items.is_some() {
                names.push("array");
            } else {
                return None;
            }
        }
        if let [name] = names.as_slice() {
            return Some(self.named(name, k, depth));
        }
        let types = names
            .into_iter()
            .map(|name| self.named(name, k, depth))
            .collect();
        Some(union(types))
    }

    /// The type for one JSON Schema type name.
    fn named(&mut self, name: &str, k: &Keywords<'a>, depth: usize) -> Ty {
        match name {
            "string" => Ty::Borrowed("string"),
            "number" | "integer" => Ty::Borrowed("number"),
            "boolean" => Ty::Borrowed("boolean"),
            "null" => Ty::Borrowed("null"),
            "object" => self.object_shape_of(k, depth).inline(),
            "array" => self.array(k, depth),
            _ => Ty::Borrowed("unknown"),
        }
    }

    fn array(&mut self, k: &Keywords<'a>, depth: usize) -> Ty {
        let tuple = match (k.prefix_items, k.items) {
            (Some(Value::Array(items)), _) | (None, Some(Value::Array(items))) => Some(items),
            _ => None,
        };
        if let Some(items) = tuple {
            if items.is_empty() || items.len() > self.limits.max_union_members {
                return Ty::Borrowed("unknown[]");
            }
            let members: Vec<Ty> = items.iter().map(|i| self.ty(i, depth + 1)).collect();
            // Later items are not constrained by a tuple schema unless it says so.
            return Ty::Owned(format!("[{}, ...unknown[]]", members.join(", ")));
        }
        match k.items {
            Some(items) => {
                let item = self.ty(items, depth + 1);
                if has_top_level_operator(&item) {
                    Ty::Owned(format!("({item})[]"))
                } else {
                    Ty::Owned(format!("{item}[]"))
                }
            }
            None => Ty::Borrowed("unknown[]"),
        }
    }

    /// The fields of an object schema: required ones first, in the order of the schema's
    /// `required` array (an array keeps the author's order), then the optional ones in key order
    /// (a `serde_json::Map` is sorted: this workspace does not turn on `preserve_order`), at most
    /// `max_object_properties`, the rest covered by an index signature.
    pub(crate) fn object_shape(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> ObjectShape<'a> {
        self.object_shape_of(&Keywords::of(map), depth)
    }

    fn object_shape_of(&mut self, k: &Keywords<'a>, depth: usize) -> ObjectShape<'a> {
        let props = match k.properties {
            Some(Value::Object(props)) => Some(props),
            _ => None,
        };
        let mut required: Vec<&'a str> = Vec::new();
        if let Some(Value::Array(items)) = k.required {
            let mut seen = HashSet::new();
            for name in items.iter().filter_map(Value::as_str) {
                let fresh = if items.len() <= 16 {
                    !required.contains(&name)
                } else {
                    seen.insert(name)
                };
                if fresh {
                    required.push(name);
                }
            }
        }
        // `required` lists are short; a linear scan beats hashing until they are not.
        let mut sorted_required = Vec::new();
        if required.len() > 16 {
            sorted_required = required.clone();
            sorted_required.sort_unstable();
        }
        let is_required = |name: &str| {
            if sorted_required.is_empty() {
                required.contains(&name)
            } else {
                sorted_required.binary_search(&name).is_ok()
            }
        };

        let mut order: Vec<(&'a str, Option<&'a Value>, bool)> = required
            .iter()
            .map(|name| (*name, props.and_then(|props| props.get(*name)), false))
            .collect();
        if let Some(props) = props {
            order.extend(
                props
                    .iter()
                    .filter(|(key, _)| !is_required(key))
                    .map(|(key, schema)| (key.as_str(), Some(schema), true)),
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
                None => Ty::Borrowed("unknown"),
            };
            fields.push(Field {
                key,
                name,
                optional,
                ty,
                schema,
            });
        }

        let closed = k.additional == Some(&Value::Bool(false));
        let index = match k.additional {
            Some(schema @ Value::Object(_)) if fields.is_empty() && !overflow => {
                Some(self.ty(schema, depth + 1))
            }
            // With named properties the index signature must admit their types too.
            Some(Value::Object(_)) => Some(Ty::Borrowed("unknown")),
            _ if overflow || k.pattern_properties => Some(Ty::Borrowed("unknown")),
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
    let mut literal = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    if literal.contains(['\u{2028}', '\u{2029}']) {
        literal = literal
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029");
    }
    if literal.contains("*/") {
        // `*\/` is the same string; generated text then never has a `*/` outside comment ends.
        literal = literal.replace("*/", "*\\/");
    }
    literal
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
fn union(members: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::with_capacity(members.len());
    for member in members {
        if member == "unknown" {
            return member;
        }
        // At most `max_union_members` members: a linear scan is cheaper than hashing.
        if member != "never" && !out.contains(&member) {
            out.push(member);
        }
    }
    match out.len() {
        0 => Ty::Borrowed("never"),
        1 => out.pop().unwrap_or(Ty::Borrowed("never")),
        // `&` binds tighter than `|`: members need no parentheses.
        _ => Ty::Owned(out.join(" | ")),
    }
}

/// `a & b & ...`; `unknown` parts carry no information and are dropped.
fn intersection(parts: Vec<Ty>) -> Ty {
    let mut kept: Vec<Ty> = Vec::with_capacity(parts.len());
    for part in parts {
        if part != "unknown" && !kept.contains(&part) {
            kept.push(part);
        }
    }
    let parts = kept;
    match parts.len() {
        0 => Ty::Borrowed("unknown"),
        1 => parts.into_iter().next().unwrap_or(Ty::Borrowed("unknown")),
        _ => parts
            .into_iter()
            .map(|p| {
                if has_top_level_operator(&p) {
                    Ty::Owned(format!("({p})"))
                } else {
                    p
                }
            })
            .collect::<Vec<_>>()
            .join(" & ")
            .into(),
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

/// Nesting kept in the copies of schemas that `$api` returns: serde_json's own parser refuses
/// deeper documents, so only hand-built values are cut.
const MAX_COPIED_DEPTH: usize = 128;

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

/// Whether `value` nests arrays/objects at most `max_depth` levels (checked without recursion).
fn depth_at_most(value: &Value, max_depth: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth >= max_depth {
            return false;
        }
        stack.extend(
            children
                .filter(|c| c.is_array() || c.is_object())
                .map(|c| (c, depth + 1)),
        );
    }
    true
}

/// A copy of `value` that is safe to hand out and drop: `Value::clone` (fast, recursive) when the
/// value is at most [`MAX_COPIED_DEPTH`] deep, else [`deep_clone`] cut at that depth.
pub(crate) fn bounded_copy(value: &Value) -> Value {
    if depth_at_most(value, MAX_COPIED_DEPTH) {
        value.clone()
    } else {
        deep_clone(value, MAX_COPIED_DEPTH)
    }
}
