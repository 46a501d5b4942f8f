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

    /// The finalizers of QuickJS's own classes that the bulk teardown runs (codemode-rs patch
    /// 15): they release what lives outside the heap. `JS_CodemodeFreeRuntimeInBulk` runs them
    /// by class (`JS_CLASS_C_CLOSURE`, `JS_CLASS_ARRAY_BUFFER`, `JS_CLASS_SHARED_ARRAY_BUFFER`).
    const RUN_IN_BULK: &[&str] = &["js_c_closure_finalizer", "js_array_buffer_finalizer"];

    /// The finalizers of QuickJS's own classes that the bulk teardown skips: each one only
    /// releases heap blocks and references to other values in the heap, which the allocator
    /// frees as a whole.
    const HEAP_ONLY: &[&str] = &[
        "js_array_finalizer",
        "js_array_iterator_finalizer",
        "js_async_from_sync_iterator_finalizer",
        "js_async_function_resolve_finalizer",
        "js_async_generator_finalizer",
        "js_bound_function_finalizer",
        "js_bytecode_function_finalizer",
        "js_c_function_data_finalizer",
        "js_c_function_finalizer",
        "js_callsite_finalizer",
        "js_disposable_stack_finalizer",
        "js_domexception_finalizer",
        "js_finrec_finalizer",
        "js_for_in_iterator_finalizer",
        "js_generator_finalizer",
        "js_iterator_concat_finalizer",
        "js_iterator_helper_finalizer",
        "js_iterator_wrap_finalizer",
        "js_map_finalizer",
        "js_map_iterator_finalizer",
        "js_mapped_arguments_finalizer",
        "js_object_data_finalizer",
        "js_promise_finalizer",
        "js_promise_resolve_function_finalizer",
        "js_proxy_finalizer",
        "js_regexp_finalizer",
        "js_regexp_string_iterator_finalizer",
        "js_typed_array_finalizer",
        "js_weakref_finalizer",
    ];

    /// codemode-rs patch 15: every finalizer a built-in class names in `quickjs.c`'s class
    /// tables is classified above, as run by the bulk teardown or as releasing heap memory only.
    /// A re-vendored QuickJS whose classes name another finalizer fails here, named, until
    /// someone has read it and put it in one list (and, if it reaches outside the heap, its
    /// class in `JS_CodemodeFreeRuntimeInBulk`).
    #[test]
    fn every_built_in_finalizer_is_classified_for_the_bulk_teardown() {
        let source = include_str!("../quickjs/quickjs.c");
        let mut named: Vec<&str> = source
            .lines()
            .filter_map(|line| {
                // A class table row: `{ JS_ATOM_Name, js_x_finalizer, js_x_mark },`.
                let row = line.trim_start().strip_prefix('{')?.trim_start();
                let mut fields = row.strip_prefix("JS_ATOM_")?.split(',');
                let finalizer = fields.nth(1)?.trim();
                finalizer.ends_with("_finalizer").then_some(finalizer)
            })
            .collect();
        named.sort_unstable();
        named.dedup();
        assert!(
            named.len() > 25,
            "too few class table rows read from quickjs.c: {named:?}"
        );
        let unclassified: Vec<&str> = named
            .iter()
            .copied()
            .filter(|name| !RUN_IN_BULK.contains(name) && !HEAP_ONLY.contains(name))
            .collect();
        assert!(
            unclassified.is_empty(),
            "built-in finalizers the bulk teardown (patch 15) does not know: {unclassified:?}"
        );
        let gone: Vec<&str> = RUN_IN_BULK
            .iter()
            .chain(HEAP_ONLY)
            .copied()
            .filter(|name| !named.contains(name))
            .collect();
        assert!(
            gone.is_empty(),
            "finalizers listed here that no class names any more: {gone:?}"
        );
    }
}
