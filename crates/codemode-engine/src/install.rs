//! The guest setup prepared once as an install plan: the plan the bootstrap's `install` runs in a
//! single pass, and the roots it builds only when the guest first reads them.

use std::sync::Arc;

use rquickjs::{Function, Object};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BridgeRequest, Callable, GuestPath, GuestSetup, JsonText, RequestId};

/// A host callable by index: its method and bound arguments.
pub type BridgeMethod = (String, Vec<Value>);

/// A [`GuestSetup`] prepared for installation, made once and shared by every run started with
/// it: a session prepares its setup once, and each run only clones an `Arc`.
///
/// Preparing turns the setup into the plan the VM runs, and splits off the *lazy roots*: a root
/// in [`GuestSetup::freeze`] that no alias touches (such as `tools`, `ALL_TOOLS`, `MCP`) is built
/// on the guest's first read of it. Until then its global is a configurable accessor; the first
/// read builds the root, deep-freezes it and replaces the accessor with the same read-only,
/// non-configurable binding an eagerly installed root has. A run that never reads a root pays
/// nothing for it, so the cost of a run does not grow with the catalog. The texts of values and
/// of lazy roots stay on the host side until the VM asks for them.
///
/// ```
/// use codemode_engine::{Callable, GuestSetup, PreparedSetup};
///
/// let mut setup = GuestSetup::default();
/// setup.callables.push((
///     vec!["tools".into(), "call".into()],
///     Callable::Bridge { method: "tools.call".into(), bound_args: vec![] },
/// ));
/// setup.freeze = vec!["tools".into()];
/// let prepared = PreparedSetup::new(setup);
/// let for_another_run = prepared.clone(); // an `Arc` clone
/// # drop(for_another_run);
/// ```
#[derive(Clone)]
pub struct PreparedSetup(Arc<InstallPlan>);

impl PreparedSetup {
    /// Prepares `setup`; see the type's documentation.
    pub fn new(setup: GuestSetup) -> Self {
        Self(Arc::new(InstallPlan::new(setup)))
    }

    /// The install plan every run of this setup shares.
    pub fn plan(&self) -> &Arc<InstallPlan> {
        &self.0
    }
}

impl From<GuestSetup> for PreparedSetup {
    fn from(setup: GuestSetup) -> Self {
        Self::new(setup)
    }
}

impl std::fmt::Debug for PreparedSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSetup")
            .field("plan_bytes", &self.0.plan.len())
            .field("texts", &self.0.texts.len())
            .field("bridge_methods", &self.0.bridge.len())
            .field("sync_methods", &self.0.sync.len())
            .finish()
    }
}

/// A call of `method`: its bound arguments, then the guest's.
fn request((method, bound): &BridgeMethod, id: RequestId, args: Vec<Value>) -> BridgeRequest {
    let mut all = Vec::with_capacity(bound.len() + args.len());
    all.extend_from_slice(bound);
    all.extend(args);
    BridgeRequest {
        id,
        method: method.clone(),
        args: all,
    }
}

/// The prepared plan: the eager plan `install` runs (JSON, see `install` in bootstrap.js), the
/// texts it and the lazy roots refer to by index (value texts and the plans of lazy roots), and
/// the bridge and synchronous methods by index. Intermediate objects along paths are created and
/// properties are defined (never assigned), so nothing on a prototype is consulted.
pub struct InstallPlan {
    plan: String,
    texts: Vec<Text>,
    /// The bridge methods (asynchronous host calls), by index.
    pub bridge: Vec<BridgeMethod>,
    /// The synchronous methods, by index.
    pub sync: Vec<BridgeMethod>,
}

/// The JSON text of one installed value or lazy root plan: made here, or shared between setups.
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

/// Callables as one flat list of groups sharing a parent path: `depth, ...parent, count`, then
/// `count` pairs `name, index * 2 + isBridge`. Built in path order, one group per run of
/// callables with the same parent.
#[derive(Default)]
struct Groups {
    flat: Vec<Value>,
    open: Option<(GuestPath, usize)>,
}

impl Groups {
    fn push(&mut self, parent: GuestPath, name: String, code: usize) {
        let same_parent = self.open.as_ref().is_some_and(|(open, _)| *open == parent);
        if !same_parent {
            self.close();
            self.flat.push(parent.len().into());
            self.flat.extend(parent.iter().cloned().map(Value::String));
            self.flat.push(0.into());
            self.open = Some((parent, self.flat.len() - 1));
        }
        self.flat.push(Value::String(name));
        self.flat.push(code.into());
    }

    /// Writes the member count of the open group (each member is a name and a code).
    fn close(&mut self) {
        if let Some((_, count_at)) = self.open.take() {
            let members = self.flat.len().saturating_sub(count_at + 1) / 2;
            if let Some(slot) = self.flat.get_mut(count_at) {
                *slot = members.into();
            }
        }
    }

    fn finish(mut self) -> Vec<Value> {
        self.close();
        self.flat
    }
}

/// The values (`[path, textIndex]`) and callables of one section of the plan: the eager
/// section, or one lazy root's.
#[derive(Default)]
struct Section {
    values: Vec<Value>,
    callables: Groups,
}

fn path_json(path: &[String]) -> Value {
    Value::Array(path.iter().cloned().map(Value::String).collect())
}

impl InstallPlan {
    /// The request for a guest call of bridge method `index`: its method, and its bound
    /// arguments followed by the guest's. `None` for an unknown index.
    pub(crate) fn bridge_request(
        &self,
        index: usize,
        id: RequestId,
        args: Vec<Value>,
    ) -> Option<BridgeRequest> {
        self.bridge
            .get(index)
            .map(|method| request(method, id, args))
    }

    /// As [`InstallPlan::bridge_request`], for synchronous method `index` (answered at once by
    /// `BridgeHost::call_sync`, so its id is never used).
    pub(crate) fn sync_request(&self, index: usize, args: Vec<Value>) -> Option<BridgeRequest> {
        self.sync
            .get(index)
            .map(|method| request(method, RequestId(0), args))
    }

    /// The plan of an empty setup: what a prepared VM holds until a run claims it.
    pub fn empty() -> Arc<Self> {
        static EMPTY: std::sync::OnceLock<Arc<InstallPlan>> = std::sync::OnceLock::new();
        Arc::clone(EMPTY.get_or_init(|| Arc::new(Self::new(GuestSetup::default()))))
    }

    fn new(setup: GuestSetup) -> Self {
        let valid =
            |path: &[String]| !path.is_empty() && path.iter().all(|segment| !segment.is_empty());
        let owned = setup
            .values
            .into_iter()
            .map(|(path, value)| (path, Text::Owned(value.to_string())));
        let shared = setup
            .json_values
            .into_iter()
            .map(|(path, text)| (path, Text::Shared(text)));
        let values: Vec<(GuestPath, Text)> = owned
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

        // A frozen root that no alias touches is built on first read: everything under it
        // (values and callables) goes into its own plan.
        let aliased: Vec<&str> = aliases
            .iter()
            .flat_map(|(path, existing)| [path, existing])
            .filter_map(|path| path.first().map(String::as_str))
            .collect();
        let lazy_roots: Vec<String> = freeze
            .iter()
            .filter(|root| !aliased.contains(&root.as_str()))
            .cloned()
            .collect();
        let section_of = |path: &GuestPath| -> Option<usize> {
            let root = path.first()?;
            lazy_roots.iter().position(|lazy| lazy == root)
        };

        let mut eager = Section::default();
        let mut lazy: Vec<Section> = lazy_roots.iter().map(|_| Section::default()).collect();
        let mut texts: Vec<Text> = Vec::with_capacity(values.len() + lazy_roots.len());
        let mut used = vec![false; lazy_roots.len()];
        for (path, text) in values {
            let entry = Value::Array(vec![path_json(&path), texts.len().into()]);
            texts.push(text);
            match section_of(&path) {
                Some(index) => {
                    used[index] = true;
                    lazy[index].values.push(entry);
                }
                None => eager.values.push(entry),
            }
        }
        let mut bridge = Vec::new();
        let mut sync = Vec::new();
        for (mut path, callable) in callables {
            let section = section_of(&path);
            let Some(name) = path.pop() else { continue };
            let code = match callable {
                Callable::Bridge { method, bound_args } => {
                    bridge.push((method, bound_args));
                    (bridge.len() - 1) * 2 + 1
                }
                Callable::Sync { method, bound_args } => {
                    sync.push((method, bound_args));
                    (sync.len() - 1) * 2
                }
            };
            match section {
                Some(index) => {
                    used[index] = true;
                    lazy[index].callables.push(path, name, code);
                }
                None => eager.callables.push(path, name, code),
            }
        }

        // Lazy roots with something to build: `[root, planTextIndex]`; the plan is
        // `[values, callables]` relative to a detached holder object.
        let mut lazy_entries: Vec<Value> = Vec::new();
        for ((root, section), used) in lazy_roots.iter().zip(lazy).zip(used) {
            if !used {
                continue;
            }
            let plan = Value::Array(vec![
                Value::Array(section.values),
                Value::Array(section.callables.finish()),
            ]);
            lazy_entries.push(Value::Array(vec![
                Value::String(root.clone()),
                texts.len().into(),
            ]));
            texts.push(Text::Owned(plan.to_string()));
        }
        freeze.retain(|root| !lazy_roots.contains(root));
        let alias_pairs: Vec<Value> = aliases
            .iter()
            .map(|(path, existing)| Value::Array(vec![path_json(path), path_json(existing)]))
            .collect();
        let plan = Value::Array(vec![
            Value::Array(eager.values),
            Value::Array(eager.callables.finish()),
            Value::Array(alias_pairs),
            Value::Array(freeze.into_iter().map(Value::String).collect()),
            Value::Array(lazy_entries),
        ]);
        Self {
            plan: plan.to_string(),
            texts,
            bridge,
            sync,
        }
    }

    /// The text at `index` (a value or a lazy root's plan), for the bootstrap's `hostText`.
    pub(crate) fn text(&self, index: usize) -> Option<&str> {
        self.texts.get(index).map(Text::as_str)
    }

    /// The plan as it crosses to a worker process: all of it (plain data); synchronous calls
    /// are answered by the host through the pipe (worker/).
    pub fn wire(&self) -> PlanWireRef<'_> {
        PlanWireRef {
            plan: &self.plan,
            texts: self.texts.iter().map(Text::as_str).collect(),
            bridge: &self.bridge,
            sync: &self.sync,
        }
    }

    /// The plan a worker process received.
    pub fn from_wire(wire: PlanWire) -> Self {
        Self {
            plan: wire.plan,
            texts: wire.texts.into_iter().map(Text::Owned).collect(),
            bridge: wire.bridge,
            sync: wire.sync,
        }
    }

    /// Runs the plan in the VM; `readings` makes the guest read its clock and random source
    /// through the run's tape.
    pub(crate) fn install<'js>(
        &self,
        control: &Object<'js>,
        readings: bool,
    ) -> rquickjs::Result<()> {
        let install: Function<'js> = control.get("install")?;
        install.call((self.plan.as_str(), readings))
    }
}

/// [`InstallPlan::wire`], serialized by the host.
#[derive(Serialize)]
pub struct PlanWireRef<'a> {
    plan: &'a str,
    texts: Vec<&'a str>,
    bridge: &'a [BridgeMethod],
    sync: &'a [BridgeMethod],
}

/// [`InstallPlan::wire`] as a worker process reads it.
#[derive(Deserialize)]
pub struct PlanWire {
    plan: String,
    texts: Vec<String>,
    bridge: Vec<BridgeMethod>,
    sync: Vec<BridgeMethod>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan `install` receives, and the texts (values, then lazy root plans).
    fn plan_of(setup: GuestSetup) -> (Value, Vec<String>) {
        let plan = InstallPlan::new(setup);
        let texts = plan.texts.iter().map(|text| text.as_str().to_owned());
        (serde_json::from_str(&plan.plan).unwrap(), texts.collect())
    }

    fn path(parts: &[&str]) -> GuestPath {
        parts.iter().map(|part| (*part).to_owned()).collect()
    }

    #[test]
    fn frozen_roots_without_aliases_are_lazy_and_the_rest_is_grouped_by_parent() {
        let bridge = || Callable::Bridge {
            method: "m".into(),
            bound_args: vec![],
        };
        let sync = || Callable::Sync {
            method: "s".into(),
            bound_args: vec![],
        };
        let mut setup = GuestSetup::default();
        let values = [
            (&["ALL"][..], serde_json::json!([{"id": 1}])),
            (&["spread"], serde_json::json!({})),
            (&["spread", "v"], serde_json::json!(1)),
            (&["loose"], serde_json::json!({"a": 1})),
            (&["aliased"], serde_json::json!({})),
            (&["bad", ""], serde_json::json!({})),
        ];
        for (at, value) in values {
            setup.values.push((path(at), value));
        }
        let shared = JsonText::new(&serde_json::json!({"shared": true}));
        setup.json_values.push((path(&["SHARED"]), shared));
        setup.callables.push((path(&["tools", "a"]), bridge()));
        setup.callables.push((path(&["tools", "b"]), sync()));
        setup.callables.push((path(&["top"]), bridge()));
        setup.callables.push((path(&["loose", "f"]), bridge()));
        setup.callables.push((path(&["bad", ""]), bridge()));
        setup.aliases.push((path(&["x"]), path(&["aliased"])));
        setup.freeze = ["ALL", "spread", "aliased", "tools", "", "SHARED", "never"]
            .map(String::from)
            .to_vec();
        let (plan, texts) = plan_of(setup);
        assert_eq!(
            plan,
            serde_json::json!([
                [[["loose"], 3], [["aliased"], 4]],
                [0, 1, "top", 3, 1, "loose", 1, "f", 5],
                [[["x"], ["aliased"]]],
                ["aliased"],
                [["ALL", 6], ["spread", 7], ["tools", 8], ["SHARED", 9]]
            ])
        );
        let expect = [
            r#"[{"id":1}]"#,
            "{}",
            "1",
            r#"{"a":1}"#,
            "{}",
            r#"{"shared":true}"#,
            r#"[[[["ALL"],0]],[]]"#,
            r#"[[[["spread"],1],[["spread","v"],2]],[]]"#,
            r#"[[],[1,"tools",2,"a",1,"b",0]]"#,
            r#"[[[["SHARED"],5]],[]]"#,
        ];
        assert_eq!(texts, expect);
    }
}
