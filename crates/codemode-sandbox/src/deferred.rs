//! Deferred built-ins. The bootstrap replaces about a hundred built-in methods by guards (see
//! bootstrap.js), and building every guard in every fresh VM was most of the bootstrap's cost,
//! although a program touches a handful of them. Instead, each guarded property is *deferred* in
//! place (vendored QuickJS, patch 5 in `crates/codemode-quickjs-sys/PATCHES.md`): the property hides its
//! value, the original built-in, and its first access of any kind (a read, a descriptor, a
//! redefinition, freezing its holder) sets it to what the realm's factory, a bootstrap closure,
//! returns for `(holder, name, original)`: the guard. Flags and the property's position in the key
//! order are kept, so only timing tells a deferred property from an installed one, and no path
//! reaches an original: until its guard exists, a deferred property has no value to read. Most
//! guarded methods are built-ins QuickJS itself makes on first access; such a property keeps
//! QuickJS's recipe instead of a value, and the original is made only to be handed to the
//! factory, so a VM whose program touches none of them never makes them at all.
//!
//! This module holds the unsafe calls into the patched QuickJS (the workspace denies unsafe code;
//! see the lint table in the root `Cargo.toml`).
#![allow(unsafe_code)]

use rquickjs::{Array, Ctx, Function, Object, atom::PredefinedAtom, qjs};

/// An object holding guarded built-in methods: its index in `deferredHolders` in bootstrap.js,
/// which hands them over in this order (`ARRAY_PROTO` and so on there and in guards.js). An
/// order that disagreed would name a method on the wrong holder, where it is not an own data
/// property, and every VM build would fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    ArrayProto,
    StringProto,
    TypedArrayProto,
    Global,
    Json,
    ObjectCtor,
    Reflect,
    ArrayCtor,
    TypedArrayCtor,
}

/// A list of guarded methods of one holder. guards.js `findMaker` gives every member of a list
/// with a `family` the same kind of guard (it asks for the family through `hostGuardFamily`); the
/// members of a list without one have cases of their own there.
pub(crate) struct GuardedMethods {
    pub(crate) holder: Holder,
    pub(crate) family: Option<&'static str>,
    /// The names, separated by whitespace.
    pub(crate) names: &'static str,
}

/// Every guarded built-in method, deferred in every fresh VM before any guest code
/// ([`defer_guarded_methods`]). The one list of them: guards.js reads the families from here
/// ([`guard_family`]).
/// The guarded constructors, which are values rather than names, are deferred by bootstrap.js
/// through [`defer`]. Adding a method: its name here, and its case in guards.js `findMaker`.
/// trimLeft and trimRight are the very functions trimStart and trimEnd (aliases): guarded too.
pub(crate) const GUARDED_METHODS: &[GuardedMethods] = &[
    GuardedMethods {
        holder: Holder::ArrayProto,
        family: Some("unpolledScans"),
        names: "join toLocaleString reverse toReversed slice splice toSpliced copyWithin sort \
            toSorted shift unshift fill with pop push at",
    },
    GuardedMethods {
        holder: Holder::ArrayProto,
        family: None,
        names: "concat flat flatMap",
    },
    GuardedMethods {
        holder: Holder::StringProto,
        family: None,
        names: "indexOf lastIndexOf includes split replace replaceAll repeat padStart padEnd \
            concat",
    },
    GuardedMethods {
        holder: Holder::StringProto,
        family: Some("stringScans"),
        names: "normalize localeCompare toLowerCase toUpperCase toLocaleLowerCase \
            toLocaleUpperCase trim trimStart trimEnd trimLeft trimRight isWellFormed \
            toWellFormed",
    },
    GuardedMethods {
        holder: Holder::TypedArrayProto,
        family: None,
        names: "sort toSorted join",
    },
    GuardedMethods {
        holder: Holder::TypedArrayProto,
        family: Some("typedArrayScans"),
        names: "set slice subarray fill copyWithin indexOf lastIndexOf includes toLocaleString \
            reverse toReversed with",
    },
    GuardedMethods {
        holder: Holder::Global,
        family: None,
        names: "eval",
    },
    GuardedMethods {
        holder: Holder::Global,
        family: Some("uriCodings"),
        names: "encodeURI encodeURIComponent decodeURI decodeURIComponent escape unescape",
    },
    GuardedMethods {
        holder: Holder::Json,
        family: None,
        names: "parse stringify",
    },
    GuardedMethods {
        holder: Holder::ObjectCtor,
        family: Some("objectScans"),
        names: "keys values entries getOwnPropertyNames assign freeze seal",
    },
    GuardedMethods {
        holder: Holder::ObjectCtor,
        family: Some("objectPolls"),
        names: "fromEntries getOwnPropertySymbols isFrozen isSealed",
    },
    GuardedMethods {
        holder: Holder::Reflect,
        family: None,
        names: "ownKeys",
    },
    GuardedMethods {
        holder: Holder::ArrayCtor,
        family: None,
        names: "from of",
    },
    GuardedMethods {
        holder: Holder::TypedArrayCtor,
        family: None,
        names: "from",
    },
];

/// Makes `factory` the realm's factory for deferred properties, then defers every method of
/// [`GUARDED_METHODS`] on its holder (`holders`, in [`Holder`] order). Fails (with the exception
/// pending) if a name is not an own data property of its holder holding an object.
pub(crate) fn defer_guarded_methods<'js>(
    ctx: &Ctx<'js>,
    factory: Function<'js>,
    holders: Array<'js>,
) -> rquickjs::Result<()> {
    let ctx_ptr = ctx.as_raw().as_ptr();
    set_factory(ctx, &factory);
    for list in GUARDED_METHODS {
        let holder: Object<'js> = holders.get(list.holder as usize)?;
        for name in list.names.split_ascii_whitespace() {
            // SAFETY: `ctx` is live and current; `name` is valid UTF-8 of the given length (no
            // NUL needed).
            let atom =
                unsafe { qjs::JS_NewAtomLen(ctx_ptr, name.as_ptr().cast(), name.len() as _) };
            defer_named(ctx, &holder, atom)?;
        }
    }
    Ok(())
}

/// The family of the guarded method `name` of the holder with index `holder` ([`Holder`]), if
/// its list has one: guards.js `findMaker` makes the same kind of guard for every member.
pub(crate) fn guard_family(holder: u32, name: &str) -> Option<&'static str> {
    GUARDED_METHODS
        .iter()
        .find(|list| {
            list.holder as u32 == holder && list.names.split_ascii_whitespace().any(|n| n == name)
        })?
        .family
}

/// Makes `factory` the realm's factory for deferred properties, then defers the properties of
/// `holder` that `names` lists (the guarded constructors' globals, the runtime globals). Fails
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

/// Makes `factory` the realm's factory for deferred properties, then defers the `constructor`
/// property of the prototype of each constructor in `ctors` (the guarded constructors: a guard
/// replaces the original wherever it is reachable). Fails (with the exception pending) as
/// [`defer`] does.
pub(crate) fn defer_constructors<'js>(
    ctx: &Ctx<'js>,
    factory: Function<'js>,
    ctors: Array<'js>,
) -> rquickjs::Result<()> {
    set_factory(ctx, &factory);
    for ctor in ctors.iter::<Object<'js>>() {
        let prototype: Object<'js> = ctor?.get(PredefinedAtom::Prototype)?;
        // `constructor` is one of QuickJS's predefined atoms: no lookup, nothing to free.
        defer_property(ctx, &prototype, qjs::JS_ATOM_constructor as qjs::JSAtom)?;
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
    fn a_built_in_quickjs_has_not_made_yet_is_made_only_when_its_property_is() {
        // `Array.prototype.join` and `String.prototype.padEnd` are lazy in QuickJS (autoinit
        // function-list entries): deferring keeps them unmade, and the factory gets the very
        // built-in, made at the property's first access, with its name and length. An entry
        // made before deferral (read first) is deferred as a value, as any other.
        let answer = probe(
            "Array.prototype",
            &["join", "at"],
            "(h, name, original) => { globalThis.made = (globalThis.made || []).concat(name); \
              return function guard(...args) { return 'guarded ' + Reflect.apply(original, this, args) } }",
            "[globalThis.made, [1, 2].join('-'), made, [Array.prototype.join.name, Array.prototype.join.length], \
              Object.getOwnPropertyDescriptor(Array.prototype, 'join').enumerable, [1, 2].at(-1), made]",
        );
        assert_eq!(
            answer,
            r#"[null,"guarded 1-2",["join"],["guard",0],false,"guarded 2",["join","at"]]"#
        );
        let touched_first = probe(
            "(String.prototype.padEnd, String.prototype)",
            &["padEnd"],
            "(h, name, original) => [name, original.name, original.length, original.call('a', 3, '.')]",
            "'x'.padEnd",
        );
        assert_eq!(touched_first, r#"["padEnd","padEnd",1,"a.."]"#);
        let lazy = probe(
            "String.prototype",
            &["padEnd"],
            "(h, name, original) => [name, original.name, original.length, original.call('a', 3, '.')]",
            "'x'.padEnd",
        );
        assert_eq!(lazy, touched_first);
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
                "(h, name, original) => ({ guard: name, wraps: original.secret })",
                access,
            );
            assert_eq!(answer, r#"{"guard":"f","wraps":true}"#, "{access}");
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
    fn each_guarded_method_is_listed_once_and_its_family_answers_for_it() {
        let mut seen = std::collections::HashSet::new();
        for list in GUARDED_METHODS {
            for name in list.names.split_ascii_whitespace() {
                assert!(seen.insert((list.holder, name)), "{name} is listed twice");
                assert_eq!(guard_family(list.holder as u32, name), list.family);
            }
        }
        assert_eq!(
            guard_family(Holder::StringProto as u32, "trimLeft"),
            Some("stringScans")
        );
        // A name guarded on another holder only, and a holder that does not exist.
        assert_eq!(guard_family(Holder::StringProto as u32, "push"), None);
        assert_eq!(guard_family(99, "push"), None);
    }

    #[test]
    fn a_constructor_is_deferred_where_its_prototype_names_it() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let ctors: Array<'_> = ctx
                .eval("globalThis.C = function C() {}; globalThis.D = class D {}; [C, D]")
                .unwrap();
            let factory: Function<'_> = ctx
                .eval("((holder, name, original) => ({ made: name, original: original.name }))")
                .unwrap();
            defer_constructors(&ctx, factory, ctors).unwrap();
            let made: String = ctx
                .eval("JSON.stringify([C.prototype.constructor, D.prototype.constructor.made, Object.keys(C.prototype)])")
                .unwrap();
            // The factory gets the original; the property keeps its flags (not enumerable).
            assert_eq!(made, r#"[{"made":"constructor","original":"C"},"constructor",[]]"#);
            // Not a constructor's prototype: refused, with the exception pending.
            let plain: Array<'_> = ctx.eval("[{ prototype: {} }]").unwrap();
            let factory: Function<'_> = ctx.eval("(() => 0)").unwrap();
            assert!(defer_constructors(&ctx, factory, plain).is_err());
            drop(ctx.catch());
        });
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
        // Patch 6: JS_FreeRuntime frees every object as garbage without marking; a native's
        // captured state must still be dropped, whatever cycles hold it.
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
}
