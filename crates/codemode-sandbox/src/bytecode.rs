//! The bootstrap module, compiled once per process to QuickJS bytecode and loaded into each fresh
//! VM: parsing and compiling the bootstrap source took most of the cost of a fresh VM.
//!
//! This is the workspace's one exception to its unsafe-code ban (the workspace lints `deny` it
//! rather than `forbid` it, so that this module alone can allow it): rquickjs offers bytecode loading only as an
//! `unsafe fn`, since QuickJS trusts bytecode blindly. The bytes loaded here never come from
//! outside: they are written by the same QuickJS build, in this process, from the bootstrap source
//! compiled into the crate, and are never modified afterwards. Guest code cannot reach or alter
//! them. If compiling fails (it cannot for the shipped source), each VM compiles the source itself.
#![allow(unsafe_code)]

use std::sync::OnceLock;

use rquickjs::{Context, Ctx, Function, Module, Runtime, WriteOptions};

/// A module of the bootstrap. `Core` loads into every VM before any guest code; the others load
/// on first use, from the core (its `hostPart` native), so a VM pays only for what its program
/// touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// `bootstrap.js`: the bridge, the installer, the deferral of the guarded built-ins.
    Core,
    /// `bootstrap/guards.js`: the guard makers of the deferred built-ins.
    Guards,
    /// `bootstrap/globals.js`: console, TextEncoder, TextDecoder and structuredClone.
    Globals,
}

impl Part {
    const ALL: [Part; 3] = [Part::Core, Part::Guards, Part::Globals];

    /// The part the bootstrap's `hostPart(index)` names (`GUARDS_PART` and so on).
    pub(crate) fn from_index(index: u32) -> Option<Part> {
        Self::ALL.get(usize::try_from(index).ok()?).copied()
    }

    /// The trusted source.
    fn source(self) -> &'static str {
        match self {
            Part::Core => include_str!("bootstrap.js"),
            Part::Guards => include_str!("bootstrap/guards.js"),
            Part::Globals => include_str!("bootstrap/globals.js"),
        }
    }

    /// The module name, shown in stack traces of bootstrap frames.
    fn name(self) -> &'static str {
        match self {
            Part::Core => "<codemode>",
            Part::Guards => "<codemode guards>",
            Part::Globals => "<codemode globals>",
        }
    }

    /// The part's bytecode, written once per process; `None` if it could not be compiled.
    fn bytecode(self) -> Option<&'static [u8]> {
        static BYTECODE: [OnceLock<Option<Vec<u8>>>; 3] = [const { OnceLock::new() }; 3];
        BYTECODE[self as usize]
            .get_or_init(|| compile(self))
            .as_deref()
    }
}

/// Without source text and debug information: less to load per VM, guest code that stringifies
/// a bootstrap function (`text.toString()`) sees no bootstrap source, and bootstrap frames in
/// guest-visible stacks carry no line numbers (`at encode (<null>:0:1)`).
fn write_options() -> WriteOptions {
    WriteOptions {
        strip_source: true,
        strip_debug: true,
        ..WriteOptions::default()
    }
}

fn compile(part: Part) -> Option<Vec<u8>> {
    let runtime = Runtime::new().ok()?;
    let context = Context::full(&runtime).ok()?;
    context
        .with(|ctx| Module::declare(ctx, part.name(), part.source())?.write(write_options()))
        .ok()
}

/// The default export of `part`, loaded and evaluated in this VM (at most once per VM: module
/// names are unique in a context).
pub(crate) fn load_part<'js>(ctx: &Ctx<'js>, part: Part) -> rquickjs::Result<Function<'js>> {
    let module = match part.bytecode() {
        // SAFETY: `bytes` is the unmodified output of `Module::write` (QuickJS `JS_WriteObject`)
        // for this part, made by `compile` above in this process with this very QuickJS build,
        // so it is well-formed bytecode of the format `JS_ReadObject` expects. Nothing else can
        // write to it: it is private to this module and immutable once initialized.
        Some(bytes) => unsafe { Module::load(ctx.clone(), bytes) }?,
        None => Module::declare(ctx.clone(), part.name(), part.source())?,
    };
    default_export(module)
}

/// The bootstrap's default export (the function that makes the control object).
pub(crate) fn load_bootstrap<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    load_part(ctx, Part::Core)
}

fn default_export<'js>(module: Module<'js>) -> rquickjs::Result<Function<'js>> {
    let (module, _evaluated) = module.eval()?;
    module.get("default")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_loads_from_bytecode_and_from_source() {
        for (part, length) in [(Part::Core, 2), (Part::Guards, 1), (Part::Globals, 1)] {
            assert!(part.bytecode().is_some_and(|bytes| !bytes.is_empty()));
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let loaded = load_part(&ctx, part).unwrap();
                assert_eq!(loaded.get::<_, u32>("length").unwrap(), length);
            });
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let declared = Module::declare(ctx.clone(), part.name(), part.source()).unwrap();
                let compiled = default_export(declared).unwrap();
                assert_eq!(compiled.get::<_, u32>("length").unwrap(), length);
            });
        }
    }
}
