//! The guest setup as one install plan the bootstrap runs in a single pass.

use std::collections::HashMap;
use std::sync::Arc;

use rquickjs::{Function, Object};
use serde_json::Value;

use crate::{Callable, GuestPath, GuestSetup, JsonText, LocalFn, RunError};

/// A bridge callable by index: its method and bound arguments.
pub(crate) type BridgeMethod = (String, Vec<Value>);

/// The guest setup prepared for installation: the plan the bootstrap's `install` runs in one pass
/// (JSON, see `install` in bootstrap.js), the JSON texts of the values it refers to by index, the
/// bridge methods and the local functions by index. Intermediate objects along paths are created
/// and properties are defined (never assigned), so nothing on a prototype is consulted.
pub(crate) struct InstallPlan {
    plan: String,
    texts: Vec<Text>,
    pub(crate) methods: Vec<BridgeMethod>,
    pub(crate) locals: Arc<[LocalFn]>,
    /// The setup's tape, handed to the engine.
    pub(crate) tape: Option<Arc<dyn crate::Tape>>,
}

/// The JSON text of one installed value: serialized for this run, or shared between runs.
enum Text {
    Owned(String),
    Shared(JsonText),
}

impl Text {
    fn as_str(&self) -> &str {
        match self {
            Self::Owned(text) => text,
            Self::Shared(text) => text.as_str(),
        }
    }
}

/// Writes the member count of the callable group whose count slot is at `count_at` (each member
/// is a name and a code after the slot).
fn close_group(flat: &mut [Value], count_at: usize) {
    let members = flat.len().saturating_sub(count_at + 1) / 2;
    if let Some(slot) = flat.get_mut(count_at) {
        *slot = members.into();
    }
}

impl InstallPlan {
    pub(crate) fn new(setup: GuestSetup) -> Result<Self, RunError> {
        let valid =
            |path: &[String]| !path.is_empty() && path.iter().all(|segment| !segment.is_empty());
        let tape = setup.tape;
        let mut methods = Vec::new();
        let mut locals: Vec<LocalFn> = Vec::new();
        let values = setup
            .values
            .into_iter()
            .map(|(path, value)| (path, Text::Owned(value.to_string())));
        let shared = setup
            .json_values
            .into_iter()
            .map(|(path, text)| (path, Text::Shared(text)));
        let values: Vec<(GuestPath, Text)> = values
            .chain(shared)
            .filter(|(path, _)| valid(path))
            .collect();
        let callables: Vec<(GuestPath, Callable)> = setup
            .callables
            .into_iter()
            .filter(|(path, _)| valid(path))
            .collect();
        let aliases: Vec<(GuestPath, GuestPath)> = setup
            .aliases
            .into_iter()
            .filter(|(path, existing)| valid(path) && valid(existing))
            .collect();
        let mut freeze: Vec<String> = setup
            .freeze
            .into_iter()
            .filter(|root| !root.is_empty())
            .collect();

        // A frozen root set by exactly one object or array value, and by nothing else, is built
        // on first read (see `pinLazy` in bootstrap.js): a run that never reads it never pays
        // for parsing and freezing it.
        let mut uses: HashMap<&str, usize> = HashMap::new();
        let paths = values.iter().map(|(path, _)| path);
        let paths = paths.chain(callables.iter().map(|(path, _)| path));
        let paths = paths.chain(aliases.iter().flat_map(|(path, existing)| [path, existing]));
        for path in paths {
            if let Some(root) = path.first() {
                *uses.entry(root.as_str()).or_default() += 1;
            }
        }
        let mut eager: Vec<(&GuestPath, usize)> = Vec::new();
        let mut lazy: Vec<(&str, usize)> = Vec::new();
        for (index, (path, text)) in values.iter().enumerate() {
            let composite = text.as_str().starts_with(['{', '[']);
            match path.as_slice() {
                [root]
                    if composite
                        && uses.get(root.as_str()) == Some(&1)
                        && freeze.contains(root) =>
                {
                    lazy.push((root, index));
                }
                _ => eager.push((path, index)),
            }
        }
        freeze.retain(|root| !lazy.iter().any(|(lazy_root, _)| lazy_root == root));

        // Callables as one flat list of groups sharing a parent path: `depth, ...parent, count`,
        // then `count` pairs `name, index * 2 + isBridge`.
        let mut flat: Vec<Value> = Vec::with_capacity(callables.len() * 2 + 8);
        let mut group: Option<(GuestPath, usize)> = None;
        for (mut path, callable) in callables {
            let Some(name) = path.pop() else { continue };
            let (is_bridge, index) = match callable {
                Callable::Bridge { method, bound_args } => {
                    methods.push((method, bound_args));
                    (1, methods.len() - 1)
                }
                Callable::Local(local) => {
                    locals.push(local);
                    (0, locals.len() - 1)
                }
            };
            let same_parent = group.as_ref().is_some_and(|(parent, _)| *parent == path);
            if !same_parent {
                if let Some((_, count_at)) = group.take() {
                    close_group(&mut flat, count_at);
                }
                flat.push(path.len().into());
                flat.extend(path.iter().cloned().map(Value::String));
                flat.push(0.into());
                group = Some((path, flat.len() - 1));
            }
            flat.push(Value::String(name));
            flat.push((index * 2 + is_bridge).into());
        }
        if let Some((_, count_at)) = group {
            close_group(&mut flat, count_at);
        }
        let plan =
            serde_json::to_string(&(eager, flat, &aliases, &freeze, lazy)).map_err(|error| {
                RunError::RuntimeUnavailable(format!("the guest setup is not JSON: {error}"))
            })?;
        Ok(Self {
            plan,
            texts: values.into_iter().map(|(_, text)| text).collect(),
            methods,
            locals: locals.into(),
            tape,
        })
    }

    pub(crate) fn install<'js>(&self, control: &Object<'js>) -> rquickjs::Result<()> {
        let install: Function<'js> = control.get("install")?;
        let texts: Vec<&str> = self.texts.iter().map(Text::as_str).collect();
        install.call((self.plan.as_str(), texts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan `install` receives, and the texts of the roots built on first read.
    fn plan_of(setup: GuestSetup) -> (Value, Vec<String>) {
        let plan = InstallPlan::new(setup).unwrap();
        let texts = plan.texts.iter().map(|text| text.as_str().to_owned());
        (serde_json::from_str(&plan.plan).unwrap(), texts.collect())
    }

    fn path(parts: &[&str]) -> GuestPath {
        parts.iter().map(|part| (*part).to_owned()).collect()
    }

    #[test]
    fn callables_are_grouped_by_parent_and_lone_frozen_values_are_lazy() {
        let bridge = || Callable::Bridge {
            method: "m".into(),
            bound_args: vec![],
        };
        let local = || Callable::Local(Arc::new(|_| Ok(Value::Null)));
        let mut setup = GuestSetup::default();
        let values = [
            (&["ALL"][..], serde_json::json!([{"id": 1}])),
            (&["spread"], serde_json::json!({})),
            (&["spread", "v"], serde_json::json!(1)),
            (&["loose"], serde_json::json!({"a": 1})),
            (&["n"], serde_json::json!(3)),
            (&["aliased"], serde_json::json!({})),
            (&["bad", ""], serde_json::json!({})),
        ];
        for (at, value) in values {
            setup.values.push((path(at), value));
        }
        let shared = JsonText::new(&serde_json::json!({"shared": true}));
        setup.json_values.push((path(&["SHARED"]), shared));
        setup.callables.push((path(&["tools", "a"]), bridge()));
        setup.callables.push((path(&["tools", "b"]), local()));
        setup.callables.push((path(&["top"]), bridge()));
        setup.callables.push((path(&["tools", "c"]), bridge()));
        setup.callables.push((path(&["bad", ""]), bridge()));
        setup.aliases.push((path(&["x"]), path(&["aliased"])));
        setup.freeze = ["ALL", "spread", "n", "aliased", "tools", "", "SHARED"]
            .map(String::from)
            .to_vec();
        let (plan, texts) = plan_of(setup);
        assert_eq!(
            plan,
            serde_json::json!([
                [
                    [["spread"], 1],
                    [["spread", "v"], 2],
                    [["loose"], 3],
                    [["n"], 4],
                    [["aliased"], 5]
                ],
                [
                    1, "tools", 2, "a", 1, "b", 0, 0, 1, "top", 3, 1, "tools", 1, "c", 5
                ],
                [[["x"], ["aliased"]]],
                ["spread", "n", "aliased", "tools"],
                [["ALL", 0], ["SHARED", 6]]
            ])
        );
        let expect = [
            r#"[{"id":1}]"#,
            "{}",
            "1",
            r#"{"a":1}"#,
            "3",
            "{}",
            r#"{"shared":true}"#,
        ];
        assert_eq!(texts, expect);
    }
}
