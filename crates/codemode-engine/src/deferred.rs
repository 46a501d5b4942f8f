//! Deferred runtime globals. `console`, `TextEncoder`, `TextDecoder`, `structuredClone` and the
//! timers are bootstrap code (bootstrap/globals.js) that most programs never touch; building them
//! in every fresh VM would cost more than the rest of the bootstrap. Instead, each is *deferred*
//! in place (patch 5 in `crates/codemode-quickjs-sys/PATCHES.md`): the global holds a stub
//! hidden from every JS path, and its first access of any kind (a read, a descriptor, a
//! redefinition, freezing the global object) sets it to what the realm's factory, a bootstrap
//! closure, returns for `(holder, name, stub)`: the real global, built then. Flags and the
//! property's position in the key order are kept, so only timing tells a deferred property from
//! an installed one.
//!
//! Eight families of built-ins (`Map` and `Set`, the typed arrays, the weak references, `Date`,
//! `RegExp`, `DOMException` and the two disposable stacks) are made on first use by QuickJS itself
//! (patch 12), maybe by guest code. The bootstrap gives QuickJS a hook ([`on_intrinsics`]) that
//! takes what the runtime globals use of a family as it is made, before anything else can reach
//! it, and makes the families a part of them needs ([`make_intrinsics`]) before that part loads
//! or runs.
//!
//! This module holds the unsafe calls into the patched QuickJS (the workspace denies unsafe code;
//! see the lint table in the root `Cargo.toml`).
#![allow(unsafe_code)]

use rquickjs::{Array, Ctx, Function, Object, qjs};

/// Makes `factory` the realm's factory for deferred properties, then defers the properties of
/// `holder` that `names` lists (the runtime globals). Fails
/// (with the exception pending) if a name is not an own data property of `holder` holding an
/// object.
pub(crate) fn defer<'js>(
    ctx: &Ctx<'js>,
    factory: Function<'js>,
    holder: Object<'js>,
    names: Array<'js>,
) -> rquickjs::Result<()> {
    let ctx_ptr = ctx.as_raw().as_ptr();
    set_factory(ctx, &factory);
    // Raw calls per name: rquickjs's checked accessors cost more than the deferral itself.
    for index in 0..u32::try_from(names.len()).unwrap_or(u32::MAX) {
        // SAFETY: `ctx` is live and current; `names` is a live value of it, held across the
        // calls. The name read from the list is freed right after use.
        let atom = unsafe {
            let name = qjs::JS_GetPropertyUint32(ctx_ptr, names.as_raw(), index);
            let atom = qjs::JS_ValueToAtom(ctx_ptr, name);
            qjs::JS_FreeValue(ctx_ptr, name);
            atom
        };
        defer_named(ctx, &holder, atom)?;
    }
    Ok(())
}

/// Makes `factory` the realm's factory for deferred properties.
fn set_factory<'js>(ctx: &Ctx<'js>, factory: &Function<'js>) {
    // SAFETY: `ctx` is a live context, current on this thread (we are inside its `with`), and
    // `factory` a live value of it; the callee only stores a new reference to the value.
    unsafe { qjs::JS_CodemodeSetDeferredFactory(ctx.as_raw().as_ptr(), factory.as_raw()) };
}

/// Defers the property `atom` of `holder`, taking the atom (freed here; `JS_ATOM_NULL` means
/// making it threw). Fails with the exception pending.
fn defer_named<'js>(
    ctx: &Ctx<'js>,
    holder: &Object<'js>,
    atom: qjs::JSAtom,
) -> rquickjs::Result<()> {
    if atom == qjs::JS_ATOM_NULL {
        return Err(rquickjs::Error::Exception);
    }
    let deferred = defer_property(ctx, holder, atom);
    // SAFETY: `atom` is a live atom of the context's runtime, owned by this function.
    unsafe { qjs::JS_FreeAtom(ctx.as_raw().as_ptr(), atom) };
    deferred
}

/// Defers the property `atom` of `holder`. Fails, with the exception pending, if it is not an
/// own data property holding an object.
fn defer_property<'js>(
    ctx: &Ctx<'js>,
    holder: &Object<'js>,
    atom: qjs::JSAtom,
) -> rquickjs::Result<()> {
    // SAFETY: `ctx` is live and current; `holder` is a live value of it and `atom` a live atom
    // of its runtime, both held by the caller across the call. The callee only edits the
    // holder's own property in place, or throws.
    let status =
        unsafe { qjs::JS_CodemodeDeferProperty(ctx.as_raw().as_ptr(), holder.as_raw(), atom) };
    if status < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

/// Makes `hook` the context's intrinsics hook (patch 12 in
/// `crates/codemode-quickjs-sys/PATCHES.md`): QuickJS makes eight families of built-ins on first
/// use (0: `Map`, `Set`, `WeakMap`, `WeakSet`; 1: `ArrayBuffer` ... `DataView`; 2: `WeakRef`,
/// `FinalizationRegistry`; 3: `Date`; 4: `RegExp`; 5: `DOMException`; 6: `DisposableStack`; 7:
/// `AsyncDisposableStack`) and calls `hook(family, ...constructors)` as it makes each one, before
/// anything else can reach it (at once for each family made already). A call that throws is made
/// again at the next use of its family, still before anything else reaches it. Fails with the
/// exception pending if a call threw.
pub(crate) fn on_intrinsics<'js>(ctx: &Ctx<'js>, hook: Function<'js>) -> rquickjs::Result<()> {
    // SAFETY: `ctx` is a live context, current on this thread, and `hook` a live value of it,
    // held across the call; the callee stores a new reference to it, and may call it.
    let status = unsafe { qjs::JS_CodemodeSetIntrinsicsHook(ctx.as_raw().as_ptr(), hook.as_raw()) };
    if status < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

/// Makes each family of built-ins whose bit (`1 << family`) is set in `families` and which the
/// hook has not taken yet (making it if need be, then calling the hook). Fails with the exception pending (the guest's memory ran out, or the
/// hook was interrupted).
pub(crate) fn make_intrinsics(ctx: &Ctx<'_>, families: u32) -> rquickjs::Result<()> {
    // SAFETY: `ctx` is a live context, current on this thread.
    if unsafe { qjs::JS_CodemodeMakeIntrinsics(ctx.as_raw().as_ptr(), families) } < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rquickjs::{Context, Runtime};

    use super::*;

    /// Defers `names` of the object `holder` (a JS expression) with `factory` (a JS function
    /// expression) in a fresh VM, then evaluates `probe`, answering its JSON text or the error.
    fn probe(holder: &str, names: &[&str], factory: &str, probe: &str) -> String {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let holder: Object<'_> = ctx.eval(format!("globalThis.holder = {holder}")).unwrap();
            let factory: Function<'_> = ctx.eval(format!("({factory})")).unwrap();
            let names_list = Array::new(ctx.clone()).unwrap();
            for (i, name) in names.iter().enumerate() {
                names_list.set(i, *name).unwrap();
            }
            if defer(&ctx, factory, holder, names_list).is_err() {
                return format!("defer failed: {:?}", ctx.catch());
            }
            match ctx.eval::<rquickjs::Value<'_>, _>(format!("JSON.stringify({probe})")) {
                Ok(value) => value.as_string().unwrap().to_string().unwrap(),
                Err(_) => format!("threw {:?}", ctx.catch()),
            }
        })
    }

    #[test]
    fn a_deferred_property_keeps_its_flags_and_place_and_is_made_once() {
        let answer = probe(
            "(() => { const o = {}; Object.defineProperty(o, 'a', { value: 1, enumerable: true }); \
              o.f = { v: 7 }; o.z = 3; return o })()",
            &["f"],
            "(h, name, original) => { globalThis.made = (globalThis.made || 0) + 1; \
              return { from: name, v: original.v, same: h === holder } }",
            "[Object.keys(holder), Object.getOwnPropertyDescriptor(holder, 'f'), holder.f === holder.f, made]",
        );
        assert_eq!(
            answer,
            r#"[["a","f","z"],{"value":{"from":"f","v":7,"same":true},"writable":true,"enumerable":true,"configurable":true},true,1]"#
        );
    }

    #[test]
    fn a_lazy_built_in_is_deferred_like_any_value() {
        // `Array.prototype.join` and `String.prototype.padEnd` are lazy in QuickJS (autoinit
        // function-list entries): deferring makes them first, and the factory gets the very
        // built-in, with its name and length, at the property's first access.
        let answer = probe(
            "Array.prototype",
            &["join", "at"],
            "(h, name, original) => { globalThis.made = (globalThis.made || []).concat(name); \
              return function wrapped(...args) { return 'wrapped ' + Reflect.apply(original, this, args) } }",
            "[globalThis.made, [1, 2].join('-'), made, [Array.prototype.join.name, Array.prototype.join.length], \
              Object.getOwnPropertyDescriptor(Array.prototype, 'join').enumerable, [1, 2].at(-1), made]",
        );
        assert_eq!(
            answer,
            r#"[null,"wrapped 1-2",["join"],["wrapped",0],false,"wrapped 2",["join","at"]]"#
        );
        let lazy = probe(
            "String.prototype",
            &["padEnd"],
            "(h, name, original) => [name, original.name, original.length, original.call('a', 3, '.')]",
            "'x'.padEnd",
        );
        assert_eq!(lazy, r#"["padEnd","padEnd",1,"a.."]"#);
    }

    #[test]
    fn only_own_data_properties_holding_objects_can_be_deferred() {
        for (holder, name) in [
            ("{ n: 1 }", "n"),
            ("{ get g() { return {} } }", "g"),
            ("{}", "missing"),
            ("Object.create({ inherited: {} })", "inherited"),
        ] {
            let answer = probe(holder, &[name], "() => 0", "1");
            assert!(
                answer.starts_with("defer failed") && answer.contains("not an own data property"),
                "{holder}: {answer}"
            );
        }
    }

    #[test]
    fn a_factory_that_throws_leaves_the_property_deferred_for_the_next_access() {
        let answer = probe(
            "({ f: { secret: 1 } })",
            &["f"],
            "(h, name, original) => { globalThis.tries = (globalThis.tries || 0) + 1; \
              if (tries < 3) throw new RangeError('not yet'); return 'made' }",
            "[0, 1, 2].map(() => { try { return holder.f } catch (e) { return e.message } }).concat(tries)",
        );
        assert_eq!(answer, r#"["not yet","not yet","made",3]"#);
    }

    #[test]
    fn a_factory_may_touch_its_own_property_or_reshape_the_holder() {
        // Reads the property being made: the inner access makes it, the outer value is dropped.
        let nested = probe(
            "({ f: {} })",
            &["f"],
            "(h, name) => { if (!globalThis.inner) { globalThis.inner = true; return ['outer', h.f] } return 'inner' }",
            "[holder.f, holder.f]",
        );
        assert_eq!(nested, r#"["inner","inner"]"#);
        // Deletes it: the access sees no property.
        let deleted = probe(
            "({ f: {} })",
            &["f"],
            "(h) => { delete h.f; return 'made' }",
            "[holder.f, 'f' in holder]",
        );
        assert_eq!(deleted, "[null,false]");
        // Adds enough properties to move the holder's property storage.
        let reshaped = probe(
            "({ f: {} })",
            &["f"],
            "(h) => { for (let i = 0; i < 1000; i++) h['p' + i] = i; return 'made' }",
            "[holder.f, holder.p999, Object.keys(holder).length]",
        );
        assert_eq!(reshaped, r#"["made",999,1001]"#);
    }

    #[test]
    fn every_kind_of_access_makes_the_value_and_none_reveals_the_original() {
        for access in [
            "holder.f",
            "Object.getOwnPropertyDescriptor(holder, 'f').value",
            "Object.values(holder)[0]",
            "(Object.freeze(holder), holder.f)",
            "(Object.defineProperty(holder, 'f', { enumerable: true }), holder.f)",
            "Reflect.get(holder, 'f')",
            "Function('with (holder) return f')()",
            "(() => { const { f } = holder; return f })()",
        ] {
            let answer = probe(
                "({ f: { secret: true } })",
                &["f"],
                "(h, name, original) => ({ made: name, wraps: original.secret })",
                access,
            );
            assert_eq!(answer, r#"{"made":"f","wraps":true}"#, "{access}");
        }
        let deleted = probe(
            "({ f: { secret: true } })",
            &["f"],
            "() => 'made'",
            "[delete holder.f, holder.f, globalThis.made]",
        );
        assert_eq!(deleted, "[true,null,null]");
    }

    #[test]
    fn a_failed_assignment_through_a_deferred_prototype_property_keeps_no_value() {
        // `JS_SetPropertyInternal2` leaked the assigned value when the autoinit of a property on
        // the prototype chain failed; patch 5 lets that fail again and again.
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let holder: Object<'_> = ctx.eval("({ f: {} })").unwrap();
            let factory: Function<'_> = ctx.eval("(() => { throw new Error('never') })").unwrap();
            let names: Array<'_> = ctx.eval("['f']").unwrap();
            defer(&ctx, factory, holder.clone(), names).unwrap();
            ctx.globals().set("holder", holder).unwrap();
        });
        // Outside `with`: the runtime's lock is free.
        runtime.run_gc();
        let before = runtime.memory_usage().malloc_size;
        context.with(|ctx| {
            let _: rquickjs::Value<'_> = ctx
                .eval(
                    "const child = Object.create(holder); \
                     for (let i = 0; i < 32; i++) { try { child.f = 'x'.repeat(1 << 20) + i } catch (e) {} } 0",
                )
                .unwrap();
        });
        runtime.run_gc();
        let leaked = runtime.memory_usage().malloc_size - before;
        assert!(
            leaked < 1 << 20,
            "{leaked} bytes kept after 32 failed assignments of 1 MiB"
        );
    }

    #[test]
    fn tearing_a_vm_down_runs_every_finalizer_with_cycles_left_in_it() {
        // A native's captured state is dropped when its VM is torn down, whatever cycles hold
        // it.
        let held = Arc::new(());
        {
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let captured = Arc::clone(&held);
                let native =
                    Function::new(ctx.clone(), move || Arc::strong_count(&captured)).unwrap();
                ctx.globals().set("native", native).unwrap();
                let _: rquickjs::Value<'_> = ctx
                    .eval(
                        "const a = { native }, b = { a }; a.b = b; a.self = a; \
                         const p = new Promise(() => {}); p.then(() => a); \
                         globalThis.keep = [a, p, function () { return b }]",
                    )
                    .unwrap();
            });
            assert_eq!(Arc::strong_count(&held), 2);
        }
        assert_eq!(Arc::strong_count(&held), 1);
    }

    /// Sets `hook` (a JS function expression) as the intrinsics hook of a fresh VM, runs
    /// `before` (Rust, on the context), then evaluates `probe`, answering its JSON text.
    fn probe_intrinsics(hook: &str, before: impl FnOnce(&Ctx<'_>), probe: &str) -> String {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let hook: Function<'_> = ctx.eval(format!("({hook})")).unwrap();
            on_intrinsics(&ctx, hook).unwrap();
            before(&ctx);
            match ctx.eval::<rquickjs::Value<'_>, _>(format!("JSON.stringify({probe})")) {
                Ok(value) => value.as_string().unwrap().to_string().unwrap(),
                Err(_) => format!("threw {:?}", ctx.catch()),
            }
        })
    }

    /// A hook that counts its calls and keeps the names it got for each family, on the global
    /// object (which a hook may change: a family is made before the global being read is
    /// initialized).
    const COUNTING_HOOK: &str = "(family, ...ctors) => { globalThis.calls = (globalThis.calls || 0) + 1; \
                                 (globalThis.family ||= [])[family] = ctors.map((ctor) => ctor.name).join() }";

    #[test]
    fn each_family_is_made_on_first_use_after_its_hook() {
        let answer = probe_intrinsics(
            COUNTING_HOOK,
            |_| {},
            "[globalThis.calls, Object.getOwnPropertyNames(globalThis).includes('Float64Array'), \
              globalThis.calls, typeof Int8Array, globalThis.calls, family.map(String), \
              new DataView(new ArrayBuffer(2)).byteLength, globalThis.calls, \
              new Map([[1, 2]]).get(1), new WeakSet().has({}), globalThis.calls, \
              typeof new WeakRef({}).deref, typeof FinalizationRegistry, globalThis.calls, family]",
        );
        assert_eq!(
            answer,
            r#"[null,true,null,"function",1,[null,"ArrayBuffer,SharedArrayBuffer,Uint8ClampedArray,Int8Array,Uint8Array,Int16Array,Uint16Array,Int32Array,Uint32Array,BigInt64Array,BigUint64Array,Float16Array,Float32Array,Float64Array,DataView"],2,1,2,false,2,"function","function",3,["Map,Set,WeakMap,WeakSet","ArrayBuffer,SharedArrayBuffer,Uint8ClampedArray,Int8Array,Uint8Array,Int16Array,Uint16Array,Int32Array,Uint32Array,BigInt64Array,BigUint64Array,Float16Array,Float32Array,Float64Array,DataView","WeakRef,FinalizationRegistry"]]"#
        );
    }

    #[test]
    fn date_regexp_dom_exception_and_the_stacks_are_made_by_their_first_use() {
        // A regexp literal, a string method that makes a RegExp, and a DOMException thrown by
        // `atob` each make their family, as do the globals; a global keeps its place, flags and
        // identity.
        let answer = probe_intrinsics(
            COUNTING_HOOK,
            |_| {},
            "(() => { const names = Object.getOwnPropertyNames(globalThis); \
               const before = [globalThis.calls, \
                 names.indexOf('DOMException') + 1 === names.indexOf('btoa'), \
                 names.indexOf('RegExp') + 1 === names.indexOf('JSON'), \
                 names.indexOf('DisposableStack') + 1 === names.indexOf('globalThis')]; \
               const literal = /a+/.exec('caab')[0]; \
               const regexps = [globalThis.calls, family[4], 'xbx'.match('b').index, \
                 Object.getPrototypeOf(/b/) === RegExp.prototype, 'a-b'.split(/-/).join()]; \
               let thrown; \
               try { atob('!') } catch (e) { thrown = [e.name, e instanceof DOMException, e.code] } \
               const dom = [globalThis.calls, family[5], thrown, DOMException.INVALID_CHARACTER_ERR]; \
               const dates = [typeof Date.now(), new Date(0).toISOString(), globalThis.calls, \
                 family[3], Object.getOwnPropertyDescriptor(globalThis, 'Date').enumerable]; \
               const stacks = [typeof new DisposableStack().use, \
                 typeof new AsyncDisposableStack().disposeAsync, globalThis.calls, family[6], \
                 family[7]]; \
               return [before, literal, regexps, dom, dates, stacks] })()",
        );
        assert_eq!(
            answer,
            r#"[[null,true,true,true],"aa",[1,"RegExp",1,true,"a,b"],[2,"DOMException",["InvalidCharacterError",true,5],5],["number","1970-01-01T00:00:00.000Z",3,"Date",false],["function","function",5,"DisposableStack","AsyncDisposableStack"]]"#
        );
    }

    #[test]
    fn the_family_globals_keep_their_flags_order_and_identities() {
        let answer = probe_intrinsics(
            COUNTING_HOOK,
            |_| {},
            "(() => { const names = Object.getOwnPropertyNames(globalThis); \
               const at = names.indexOf('ArrayBuffer'); \
               return [names.slice(at, at + 16).join(), \
                 Object.getOwnPropertyDescriptor(globalThis, 'Uint8Array'), \
                 Object.getPrototypeOf(Int8Array) === Object.getPrototypeOf(Float64Array), \
                 Uint8Array.prototype.toString === Array.prototype.toString, \
                 Uint8Array.fromHex('ff')[0], new Uint8Array([1, 2]).toBase64(), \
                 (delete globalThis.ArrayBuffer), typeof globalThis.ArrayBuffer, \
                 new Uint8Array(1).buffer.constructor.name, globalThis.calls] })()",
        );
        assert_eq!(
            answer,
            r#"["ArrayBuffer,SharedArrayBuffer,Uint8ClampedArray,Int8Array,Uint8Array,Int16Array,Uint16Array,Int32Array,Uint32Array,BigInt64Array,BigUint64Array,Float16Array,Float32Array,Float64Array,DataView,Atomics",{"writable":true,"enumerable":false,"configurable":true},true,true,255,"AQI=",true,"undefined","ArrayBuffer",1]"#
        );
    }

    /// Making a family on first use runs no guest code, even where upstream's eager making
    /// reads a built-in the guest can change by then (`%TypedArray%.prototype.toString` is the
    /// context's own `Array.prototype.toString`): a getter there would run in the middle of
    /// making the family and could make it a second time.
    #[test]
    fn making_a_family_reads_nothing_the_guest_changed() {
        let answer = probe_intrinsics(
            COUNTING_HOOK,
            |_| {},
            "(() => { const original = Array.prototype.toString; let reads = 0; \
               Object.defineProperty(Array.prototype, 'toString', { configurable: true, \
                 get() { reads++; globalThis.inner = Uint8Array; return () => 'guest' } }); \
               const bytes = new Uint8Array(2); \
               const seen = [reads, bytes.toString(), Uint8Array.prototype.toString === original, \
                 Object.getPrototypeOf(Int8Array) === Object.getPrototypeOf(Uint8Array), \
                 globalThis.calls]; \
               delete Array.prototype.toString; \
               return seen.concat([new Float64Array(1).toString(), reads]) })()",
        );
        assert_eq!(answer, r#"[0,"0,0",true,true,1,"0",0]"#);
    }

    #[test]
    fn a_family_made_from_the_host_first_has_its_prototypes_and_calls_the_hook() {
        let answer = probe_intrinsics(
            COUNTING_HOOK,
            |ctx| {
                let bytes = rquickjs::TypedArray::<u8>::new(ctx.clone(), vec![4u8, 5]).unwrap();
                ctx.globals().set("bytes", bytes).unwrap();
            },
            "[globalThis.calls, Object.getPrototypeOf(bytes) === Uint8Array.prototype, \
              bytes.buffer instanceof ArrayBuffer, bytes[1], globalThis.calls]",
        );
        assert_eq!(answer, "[1,true,true,5,1]");
        // Set after the families are made, the hook is called at once for each.
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            make_intrinsics(&ctx, u32::MAX).unwrap();
            let hook: Function<'_> = ctx.eval(format!("({COUNTING_HOOK})")).unwrap();
            on_intrinsics(&ctx, hook).unwrap();
            let calls: i32 = ctx.eval("globalThis.calls").unwrap();
            assert_eq!(calls, 8);
        });
    }

    #[test]
    fn a_context_built_with_the_family_at_once_keeps_one_family() {
        // `JS_AddIntrinsicTypedArrays` makes the family and defines its globals; an object made
        // from the host afterwards has the globals' prototypes.
        let runtime = Runtime::new().unwrap();
        let context = Context::custom::<(
            rquickjs::context::intrinsic::Eval,
            rquickjs::context::intrinsic::TypedArrays,
        )>(&runtime)
        .unwrap();
        context.with(|ctx| {
            let bytes = rquickjs::TypedArray::<u8>::new(ctx.clone(), vec![1u8]).unwrap();
            ctx.globals().set("bytes", bytes).unwrap();
            let same: bool = ctx
                .eval(
                    "Object.getPrototypeOf(bytes) === Uint8Array.prototype && \
                     Object.getPrototypeOf(bytes.buffer) === ArrayBuffer.prototype && \
                     typeof Atomics.add === 'function'",
                )
                .unwrap();
            assert!(same);
        });
    }

    #[test]
    fn a_hook_that_throws_fails_the_access_and_is_called_again_at_the_next_use() {
        // The family is kept, but nothing of it reaches guest code before the hook has taken it.
        let answer = probe_intrinsics(
            "() => { globalThis.calls = (globalThis.calls || 0) + 1; \
                     if (globalThis.calls === 1) throw new Error('hook') }",
            |_| {},
            "[(() => { try { return typeof Uint8Array } catch (e) { return e.message } })(), \
              globalThis.calls, new Int8Array(2).length, globalThis.calls, typeof Uint8Array, \
              globalThis.calls]",
        );
        assert_eq!(answer, r#"["hook",1,2,2,"function",2]"#);
    }
}
