//! quickjs-ng as codemode-rs runs it: the C engine with the patches `PATCHES.md` lists (the
//! BigInt cap and metering, a cheaper teardown, deferred properties, prefixed symbols...) and its
//! raw bindings. This is rquickjs-sys 0.14.0 under our own name, so that any crate can depend on
//! the patched engine without a `[patch]`; `codemode-quickjs` is the safe layer above it.
//!
//! Every global C symbol is `codemode_<name>` (patch 9), and the package's `links` key is
//! `codemode-quickjs`: an upstream QuickJS may link into the same binary.

#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(clippy::unreadable_literal)]
#![allow(clippy::missing_safety_doc)]
#![allow(clippy::upper_case_acronyms)]
#![allow(clippy::uninlined_format_args)]
#![no_std]

use ::core::ptr;

/// Common error message for converting between C `size_t` and Rust `usize`;
pub const SIZE_T_ERROR: &str =
    "conversion between C type 'size_t' and Rust type 'usize' overflowed.";

/// codemode-rs patch 11 (PATCHES.md): this engine build's identity, a hash of every C source and
/// header compiled and of the defines. Bytecode is a format of one build (its opcodes, atoms and
/// layout are not checked when it is read), so bytecode written ahead of time is loaded only when
/// it carries the identity of the engine that reads it.
pub const CODEMODE_ENGINE_ID: u64 =
    match u64::from_str_radix(env!("CODEMODE_QUICKJS_ENGINE_ID"), 16) {
        Ok(id) => id,
        Err(_) => panic!("build.rs writes the engine identity as 16 hex digits"),
    };

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

#[cfg(not(feature = "bindgen"))]
include!(concat!("bindings/", bindings_env!("TARGET"), ".rs"));

#[cfg(target_pointer_width = "64")]
include!("inlines/ptr_64.rs");

#[cfg(target_pointer_width = "32")]
include!("inlines/ptr_32_nan_boxing.rs");

include!("inlines/common.rs");

// codemode-rs patch 5 (PATCHES.md): deferred own data properties. Declared by hand, since the
// bundled bindings are generated from upstream's header.
unsafe extern "C" {
    /// Defers the own data property `prop` of `obj`, whose value must be an object (see
    /// `JS_CodemodeDeferProperty` in quickjs.c): the property keeps the value hidden, and its
    /// first access sets it to what the realm's deferred factory returns for
    /// `(obj, prop as a string, the value)`. Returns -1 with a pending exception if `prop` is not
    /// an own data property of `obj` holding an object.
    #[link_name = "codemode_JS_CodemodeDeferProperty"]
    pub fn JS_CodemodeDeferProperty(
        ctx: *mut JSContext,
        obj: JSValue,
        prop: JSAtom,
    ) -> ::core::ffi::c_int;
    /// Sets the factory of the realm's deferred properties (held by the context).
    #[link_name = "codemode_JS_CodemodeSetDeferredFactory"]
    pub fn JS_CodemodeSetDeferredFactory(ctx: *mut JSContext, factory: JSValue);
}

// codemode-rs patch 12 (PATCHES.md): `JS_NewContext` makes eight intrinsic families on first use:
// 0 `Map`, `Set`, `WeakMap`, `WeakSet`; 1 the typed-array family (`ArrayBuffer`,
// `SharedArrayBuffer`, the twelve typed arrays, `DataView`); 2 `WeakRef`, `FinalizationRegistry`;
// 3 `Date`; 4 `RegExp`; 5 `DOMException`; 6 `DisposableStack`; 7 `AsyncDisposableStack`. Declared
// by hand, as above.
unsafe extern "C" {
    /// Makes `hook` (a function) the context's intrinsics hook: it is called once per family,
    /// as the family is made and before any other code can reach it, with the family's number
    /// and its constructors in the order of their globals; at once for each family made
    /// already. A call that throws is made again at the next use of its family. Returns -1 with
    /// a pending exception if a call threw.
    #[link_name = "codemode_JS_CodemodeSetIntrinsicsHook"]
    pub fn JS_CodemodeSetIntrinsicsHook(ctx: *mut JSContext, hook: JSValue) -> ::core::ffi::c_int;
    /// Makes each family whose bit (`1 << family`) is set in `families` and which the hook has
    /// not taken yet (making it if need be, then calling the hook). Returns -1 with a pending exception on failure.
    #[link_name = "codemode_JS_CodemodeMakeIntrinsics"]
    pub fn JS_CodemodeMakeIntrinsics(ctx: *mut JSContext, families: u32) -> ::core::ffi::c_int;
}

// codemode-rs patch 15 (PATCHES.md): a runtime's teardown in bulk. Declared by hand, as above.
unsafe extern "C" {
    /// Tears `rt` down for an allocator that then frees every block it handed out (the
    /// runtime's own struct included), which the caller must make happen: runs the finalizers of
    /// the objects whose class reaches outside the heap (classes made with `JS_NewClass`, C
    /// closures, array buffers) and the runtime finalizers, and frees nothing itself. Every
    /// context must have been freed.
    #[link_name = "codemode_JS_CodemodeFreeRuntimeInBulk"]
    pub fn JS_CodemodeFreeRuntimeInBulk(rt: *mut JSRuntime);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::process::Command;
    use std::string::String;
    use std::vec::Vec;

    /// codemode-rs patch 9: the archive defines no global symbol outside the `codemode_`
    /// prefix, so it links beside an upstream QuickJS. A symbol a re-vendored QuickJS adds fails
    /// here, named, until it has its line in `quickjs/codemode-prefix.h`.
    #[test]
    fn every_global_symbol_carries_the_prefix() {
        let archive = concat!(env!("OUT_DIR"), "/libcodemode_quickjs.a");
        let output = match Command::new("nm")
            .args(["-g", "--defined-only", archive])
            .output()
        {
            Ok(output) if output.status.success() => output,
            other => panic!("`nm` (binutils) must be installed to run this test: {other:?}"),
        };
        let listing = String::from_utf8_lossy(&output.stdout);
        let defined: Vec<&str> = listing
            .lines()
            .filter_map(
                |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                    [_, _, name] => Some(name),
                    _ => None,
                },
            )
            .collect();
        assert!(
            defined.len() > 250,
            "too few symbols read from {archive}: {listing}"
        );
        let unprefixed: Vec<&str> = defined
            .iter()
            // Mach-O names carry a leading underscore.
            .map(|name| match cfg!(target_vendor = "apple") {
                true => name.strip_prefix('_').unwrap_or(name),
                false => name,
            })
            .filter(|name| !name.starts_with("codemode_"))
            .collect();
        assert!(
            unprefixed.is_empty(),
            "symbols without the prefix: {unprefixed:?}"
        );
    }
}
