//! Built-ins as the standard defines them, and deferred runtime globals (deferred.rs, patch 5 of
//! codemode-quickjs-sys): `console`, `TextEncoder`, `TextDecoder`, `structuredClone` and the
//! timers are made on first access. To the guest they must look exactly like installed ones, and
//! nothing the guest does before that first access may change them or see how they are made.

use rquickjs::{Context, Runtime};

use crate::support::{check, check_with, limits};

/// Every own property of the holders of the built-ins, described: key, accessor or not, flags,
/// type, and a function's name and length.
const DESCRIBE_HOLDERS: &str = "(() => {
  const TA = Object.getPrototypeOf(Uint8Array);
  const holders = [Array.prototype, String.prototype, TA.prototype, JSON, Object, Reflect, Array, TA,
    Function.prototype, Object.getPrototypeOf(async function () {}), Object.getPrototypeOf(function* () {}),
    Object.getPrototypeOf(async function* () {}), Int8Array.prototype, Uint8Array.prototype,
    Float64Array.prototype, BigUint64Array.prototype];
  const describe = (h, k) => {
    const d = Object.getOwnPropertyDescriptor(h, k);
    const v = d.value;
    return [String(k), 'get' in d, d.writable, d.enumerable, d.configurable, typeof v,
      typeof v === 'function' ? [v.name, v.length, 'prototype' in v] : null];
  };
  const globals = ['Function', 'eval', 'encodeURI', 'escape', 'unescape', 'Int8Array', 'Uint8Array',
    'Float16Array', 'BigUint64Array', 'JSON', 'Object', 'Reflect', 'Array'];
  return [
    holders.map((h) => Reflect.ownKeys(h).map((k) => describe(h, k))),
    Reflect.ownKeys(globalThis).filter((k) => globals.includes(k)),
    globals.filter((g) => g in globalThis).map((g) => describe(globalThis, g)),
  ];
})()";

#[test]
fn built_ins_keep_the_keys_order_and_descriptors_of_a_plain_vm() {
    let runtime = Runtime::new().unwrap();
    let context = Context::full(&runtime).unwrap();
    let plain: String = context.with(|ctx| {
        ctx.eval(format!("JSON.stringify({DESCRIBE_HOLDERS})"))
            .unwrap()
    });
    check(
        &format!("return {DESCRIBE_HOLDERS}"),
        &format!("completed {plain}"),
    );
}

/// No built-in is wrapped: each is the engine's own, aliases included, and large inputs run.
#[test]
fn built_ins_are_the_engines_own() {
    check_with(
        "const a = String.prototype.indexOf, b = 'x'.indexOf; \
         return [a === b, String.prototype.trimLeft === String.prototype.trimStart, \
                 String.prototype.trimRight === String.prototype.trimEnd, String.prototype.trimLeft.name, \
                 'a'.repeat(20000).indexOf('a'.repeat(9000) + 'b'), new Uint8Array(2).constructor === Uint8Array, \
                 (function () {}).constructor === Function, Function('return 7')(), eval('var direct = 8; direct'), \
                 'a'.repeat(20000).toUpperCase().length, encodeURIComponent('é'.repeat(20000)).length, \
                 ' '.repeat(9e6).trimStart().length, new Float64Array(1048577).sort().length]",
        // Inputs past the old guards' caps (8 Mi characters, 1 Mi sorted elements); `limits()`
        // puts no deadline near.
        limits(),
        r#"completed [true,true,true,"trimStart",-1,true,true,7,8,20000,120000,0,1048577]"#,
    );
}

/// Traps on everything the runtime globals could read or assign while being made: descriptor fields, function names and lengths, array indices and iteration. The
/// guest sets them, then reads (but does not call) one deferred value of every kind, removes the
/// traps and checks that none fired and that every value works.
#[test]
fn guest_traps_set_before_first_use_see_nothing_of_the_runtime_globals_being_made() {
    check(
        "const seen = [];
         const keys = ['get', 'set', 'value', 'writable', 'enumerable', 'configurable', 'name', 'length',
           'prototype', 'constructor', 'method', 'BYTES_PER_ELEMENT', 'log', '__proto__', 'then'];
         for (let i = 0; i < 40; i++) keys.push(String(i));
         const saved = Object.getOwnPropertyDescriptor(Array.prototype, Symbol.iterator);
         const traps = [];
         for (const key of keys) {
           for (const target of [Object.prototype, Array.prototype, Function.prototype]) {
             if (Object.hasOwn(target, key)) continue;
             traps.push([target, key]);
             const trap = Object.create(null);
             trap.get = () => { seen.push('get ' + key); return undefined };
             trap.set = (v) => { seen.push('set ' + key) };
             trap.configurable = true;
             Object.defineProperty(target, key, trap);
           }
         }
         const iterate = Object.create(null);
         iterate.get = () => { seen.push('iterate'); return saved.value };
         iterate.configurable = true;
         Object.defineProperty(Array.prototype, Symbol.iterator, iterate);
         const made = [Array.prototype.join, Array.prototype.push, String.prototype.indexOf,
           String.prototype.trimLeft, Uint8Array, Float64Array.prototype.constructor, Function,
           Object.getPrototypeOf(async function () {}).constructor, eval, encodeURI, JSON.stringify,
           Object.keys, Reflect.ownKeys, Array.from, Object.getPrototypeOf(Int8Array).from,
           console, TextEncoder, TextDecoder, structuredClone];
         Object.setPrototypeOf(saved, null);
         Object.defineProperty(Array.prototype, Symbol.iterator, saved);
         for (let i = 0; i < traps.length; i++) delete traps[i][0][traps[i][1]];
         const [join, push, indexOf, trimLeft, U8, F64, F, AF, ev, enc, stringify, keysOf, ownKeys,
           from, taFrom, con, TE, TD, clone] = made;
         const a = [1];
         push.call(a, 2);
         return [seen, join.call(a, '-'), indexOf.call('abc', 'c'), trimLeft.call(' t'),
           new U8([3])[0], new F64(1).length, F('return 4')(), typeof AF('return 5'), ev('6'),
           enc('a b'), stringify({ s: 1 }), keysOf({ k: 1 }), ownKeys([0]), from('ab'),
           Array.from(taFrom.call(Uint8Array, [7])), typeof con.log, Array.from(new TE().encode('h')),
           new TD().decode(new Uint8Array([105])), clone({ c: [1] })];",
        r#"completed [[],"1-2",2,"t",3,1,4,"function",6,"a%20b","{\"s\":1}",["k"],["0","length"],["a","b"],[7],"function",[104],"i",{"c":[1]}]"#,
    );
}

/// `Map` and `Set`, the typed arrays and the weak references are made on first use (patch 12 of
/// codemode-quickjs-sys), maybe by the guest, who may then change them before the runtime globals
/// are made: those use what the hook took as each family was made, and none of the changes.
#[test]
fn changing_the_families_made_on_first_use_before_the_runtime_globals_changes_nothing() {
    check(
        "const TA = Object.getPrototypeOf(Uint8Array.prototype);
         const U8 = Uint8Array, DV = DataView;
         const map = new Map([[1, 2]]), set = new Set([3]);
         Object.defineProperty(TA, 'byteLength', { get() { return 1 } });
         Object.defineProperty(TA, 'buffer', { get() { return new ArrayBuffer(8) } });
         Object.defineProperty(DV.prototype, 'byteLength', { get() { return 0 } });
         TA.slice = ArrayBuffer.prototype.slice = () => { throw new Error('sliced') };
         ArrayBuffer.isView = () => false;
         globalThis.Uint8Array = globalThis.DataView = function () { throw new Error('replaced') };
         Map.prototype.set = Map.prototype.get = Map.prototype.has = Map.prototype.forEach =
           Set.prototype.add = Set.prototype.forEach = WeakMap.prototype.get = WeakMap.prototype.set =
           () => { throw new Error('changed') };
         globalThis.Map = globalThis.Set = globalThis.WeakMap = undefined;
         const encoded = new TextEncoder().encode('hé');
         const raw = new ArrayBuffer(2);
         new U8(raw).set([106, 107]);
         const shared = { s: 1 };
         const [bytes, view, buffer, clonedMap, clonedSet, a, b] = structuredClone([new U8([1, 2, 3]),
           new DV(new ArrayBuffer(3)), raw, map, set, shared, shared]);
         return [Object.getPrototypeOf(encoded) === U8.prototype, encoded.length,
           new TextDecoder().decode(new U8([104, 105])), new TextDecoder().decode(new DV(raw, 1)),
           Object.getPrototypeOf(bytes) === U8.prototype, bytes.length, bytes[2],
           Object.getPrototypeOf(view) === DV.prototype, new U8(buffer)[1], [...clonedMap],
           [...clonedSet], a === b && a !== shared];",
        r#"completed [true,3,"hi","k",true,3,3,true,107,[[1,2]],[3],true]"#,
    );
}

/// `Date` and `DOMException` are made on first use too; structuredClone copies a Date and throws
/// its DataCloneError with the originals, whatever the guest did to them first.
#[test]
fn structured_clone_uses_the_original_date_and_dom_exception() {
    check(
        "const D = Date, DE = DOMException;
         Date.prototype.getTime = () => 0;
         Object.defineProperty(Date.prototype, 'constructor', { value: null });
         globalThis.Date = globalThis.DOMException = function () { throw new Error('replaced') };
         const copy = structuredClone({ when: new D(5) }).when;
         let error;
         try { structuredClone(() => 1) } catch (e) { error = e }
         return [Object.getPrototypeOf(copy) === D.prototype, D.prototype.valueOf.call(copy),
           error instanceof DE, error.name, error.message];",
        r#"completed [true,5,true,"DataCloneError","A function could not be cloned."]"#,
    );
}

/// Making a built-in on first use needs memory: when the guest's memory runs out as a family is
/// made (by a global, a regexp literal, a Date, or the DOMException `atob` throws), or as a method
/// QuickJS makes on first read is made (`btoa`, `flatMap`), that use throws and nothing is kept;
/// the next use makes it (codemode-quickjs-sys patches 12 and 13).
#[test]
fn a_built_in_that_runs_out_of_memory_as_it_is_made_is_made_on_the_next_access() {
    check_with(
        "const decode = atob;
         let head = null, a, b, c, d, e, f;
         try { for (;;) head = { next: head }; } catch (_) {}
         try { a = typeof Uint8Array; } catch (_) { a = 'threw'; }
         try { b = /a/.test('a'); } catch (_) { b = 'threw'; }
         try { c = new Date(0).getTime(); } catch (_) { c = 'threw'; }
         try { d = typeof btoa; } catch (_) { d = 'threw'; }
         try { e = typeof [].flatMap; } catch (_) { e = 'threw'; }
         try { decode('!'); } catch (error) {
           f = error !== null && typeof error === 'object' && error.name === 'InvalidCharacterError'
             ? 'made' : 'threw';
         }
         head = null;
         let name;
         try { atob('!'); } catch (error) { name = error.name; }
         return [a, b, c, d, e, f, typeof Uint8Array, new Uint8Array([7])[0],
           new DataView(new ArrayBuffer(1)).byteLength, /a/.test('a'), new Date(0).getTime(), name,
           btoa('a'), [[1], [2]].flatMap((x) => x).length];",
        limits().with_memory_bytes(4 << 20),
        r#"completed ["threw","threw","threw","threw","threw","threw","function",7,1,true,0,"InvalidCharacterError","YQ==",2]"#,
    );
}

#[test]
fn describing_or_freezing_the_global_object_before_first_use() {
    check(
        "const d = Object.getOwnPropertyDescriptor(globalThis, 'TextEncoder'); \
         let redefined; try { Object.defineProperty(globalThis, 'console', { value: 1 }) } catch (e) { redefined = e.name } \
         Object.freeze(globalThis); \
         return [typeof d.value, d.writable, d.configurable, redefined, Object.isFrozen(globalThis), \
                 new TextEncoder().encode('é').length, typeof console.log, typeof structuredClone]",
        r#"completed ["function",false,false,"TypeError",true,2,"function","function"]"#,
    );
}

/// A guest that makes `Array.prototype.toString` a getter before the typed arrays exist runs no
/// code while they are made (engine patch 12): one family, whose constructors are the ones the
/// runtime globals captured, so `TextEncoder`'s output is a `Uint8Array` of the guest's.
#[test]
fn a_getter_on_a_built_in_does_not_run_while_a_family_is_made() {
    check(
        "let reads = 0; \
         Object.defineProperty(Array.prototype, 'toString', { configurable: true, \
           get() { reads++; globalThis.inner = Uint8Array; return () => 'guest' } }); \
         const bytes = new Uint8Array(2), encoded = new TextEncoder().encode('hi'); \
         return [reads, bytes.toString(), encoded instanceof Uint8Array, \
                 Object.getPrototypeOf(Int8Array) === Object.getPrototypeOf(Uint8Array)]",
        r#"completed [0,"0,0",true,true]"#,
    );
}

/// Making a runtime global needs stack: at the edge of the stack its first access may fail with
/// the stack's error, and then the property stays deferred for the next access.
#[test]
fn a_runtime_global_first_touched_at_the_edge_of_the_stack_is_made_later() {
    check(
        "const outcomes = new Set();
         function dive(n) {
           try { return dive(n + 1) } catch (e) {
             try { const c = globalThis.console; outcomes.add(typeof c) } catch (e2) { outcomes.add('threw') }
             return n;
           }
         }
         dive(0);
         return [[...outcomes].every((o) => o === 'object' || o === 'threw'), typeof console, typeof console.log]",
        r#"completed [true,"object","function"]"#,
    );
}

/// Loading a part of the bootstrap from deep in guest code leaves the guest's stack limit where
/// it was (rquickjs's `Module::eval` would move the runtime's stack top to the depth of the call,
/// extending the limit by that much for the rest of the step).
#[test]
fn loading_a_part_deep_in_guest_code_keeps_the_stack_limit() {
    check(
        "let frames = 0;
         function d(k, touch) {
           if (touch && k === 0) {
             try { return [String.prototype.padEnd, console, Uint8Array].length } catch (e) { return 'threw' }
           }
           frames++;
           return d(k - 1, touch);
         }
         function depth() { frames = 0; try { d(Infinity, false) } catch (e) {} return frames }
         const before = depth();
         const touched = d(Math.floor(before * 0.7), true);
         const after = depth();
         return [touched, after < before * 1.2 ? 'kept' : 'raised ' + before + ' -> ' + after];",
        r#"completed [3,"kept"]"#,
    );
}
