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

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

#[cfg(not(feature = "bindgen"))]
include!(concat!("bindings/", bindings_env!("TARGET"), ".rs"));

#[cfg(target_pointer_width = "64")]
include!("inlines/ptr_64.rs");

#[cfg(target_pointer_width = "32")]
include!("inlines/ptr_32_nan_boxing.rs");

include!("inlines/common.rs");

/// codemode-rs patch 8 (PATCHES.md): a `JS_WriteObject` flag that writes every local and closure
/// variable name as `""`. Declared by hand, like the declarations of patch 5 below.
pub const JS_WRITE_OBJ_CODEMODE_STRIP_NAMES: u32 = 1 << 16;

// codemode-rs patch 5 (PATCHES.md): deferred own data properties. Declared by hand, since the
// bundled bindings are generated from upstream's header.
unsafe extern "C" {
    /// Defers the own data property `prop` of `obj`, whose value must be an object (see
    /// `JS_CodemodeDeferProperty` in quickjs.c): the property keeps the value hidden, and its
    /// first access sets it to what the realm's deferred factory returns for
    /// `(obj, prop as a string, the value)`. Returns -1 with a pending exception if `prop` is not
    /// an own data property of `obj` holding an object.
    pub fn JS_CodemodeDeferProperty(ctx: *mut JSContext, obj: JSValue, prop: JSAtom) -> ::core::ffi::c_int;
    /// Sets the factory of the realm's deferred properties (held by the context).
    pub fn JS_CodemodeSetDeferredFactory(ctx: *mut JSContext, factory: JSValue);
}
