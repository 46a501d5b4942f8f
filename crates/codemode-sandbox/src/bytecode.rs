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

/// The trusted bootstrap source (see `bootstrap.js`).
const BOOTSTRAP: &str = include_str!("bootstrap.js");
/// The module name, shown in stack traces of bootstrap frames.
const NAME: &str = "<codemode>";

/// The bootstrap's bytecode, written once per process; `None` if it could not be compiled.
static BYTECODE: OnceLock<Option<Vec<u8>>> = OnceLock::new();

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

fn compile() -> Option<Vec<u8>> {
    let runtime = Runtime::new().ok()?;
    let context = Context::full(&runtime).ok()?;
    context
        .with(|ctx| Module::declare(ctx, NAME, BOOTSTRAP)?.write(write_options()))
        .ok()
}

/// The bootstrap's default export (the function that makes the control object), from the
/// bootstrap module loaded and evaluated in this VM.
pub(crate) fn load_bootstrap<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let module = match BYTECODE.get_or_init(compile) {
        // SAFETY: `bytes` is the unmodified output of `Module::write` (QuickJS `JS_WriteObject`)
        // for the bootstrap module, made by `compile` above in this process with this very QuickJS
        // build, so it is well-formed bytecode of the format `JS_ReadObject` expects. Nothing else
        // can write to it: it is private to this module and immutable once initialized.
        Some(bytes) => unsafe { Module::load(ctx.clone(), bytes) }?,
        None => Module::declare(ctx.clone(), NAME, BOOTSTRAP)?,
    };
    default_export(module)
}

fn default_export<'js>(module: Module<'js>) -> rquickjs::Result<Function<'js>> {
    let (module, _evaluated) = module.eval()?;
    module.get("default")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_loads_from_bytecode_and_from_source() {
        let bytes = BYTECODE.get_or_init(compile);
        assert!(bytes.as_ref().is_some_and(|bytes| !bytes.is_empty()));
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let loaded = load_bootstrap(&ctx).unwrap();
            assert_eq!(loaded.get::<_, u32>("length").unwrap(), 2);
            let declared = Module::declare(ctx.clone(), NAME, BOOTSTRAP).unwrap();
            let compiled = default_export(declared).unwrap();
            assert_eq!(compiled.get::<_, u32>("length").unwrap(), 2);
        });
    }
}
