//! Built-in accessors made on first access (vendored QuickJS patch 7): `Map.prototype.size`,
//! `Object.prototype.__proto__`, the typed-array getters and the like are not made with every
//! fresh VM but when first touched. Every way of touching one must see what an eagerly made
//! accessor shows: the same descriptor, functions, flags and behaviour.

use rquickjs::{Context, Runtime};

use crate::support::check;

/// Evaluates `program` in a fresh context of the vendored engine (no bootstrap) and answers its
/// JSON text.
fn in_fresh_context(program: &str) -> String {
    let runtime = Runtime::new().unwrap();
    let context = Context::full(&runtime).unwrap();
    context.with(|ctx| {
        ctx.eval::<String, _>(format!("JSON.stringify({program})"))
            .unwrap()
    })
}

/// A built-in accessor, described: where the getter and setter come from, their names and
/// lengths, and the property's flags.
const DESCRIBE: &str = "const describe = (holder, key) => {
    const d = Object.getOwnPropertyDescriptor(holder, key);
    const fn = (f) => typeof f === 'function' ? [f.name, f.length] : String(f);
    return [String(key), 'value' in d, fn(d.get), fn(d.set), d.enumerable, d.configurable];
  };";

const ACCESSORS: &str = r#"[["size",false,["get size",0],"undefined",false,true],["__proto__",false,["get __proto__",0],["set __proto__",1],false,true],["flags",false,["get flags",0],"undefined",false,true],["description",false,["get description",0],"undefined",false,true],["byteLength",false,["get byteLength",0],"undefined",false,true],["length",false,["get length",0],"undefined",false,true],["Symbol(Symbol.species)",false,["get [Symbol.species]",0],"undefined",false,true]]"#;

#[test]
fn a_built_in_accessor_is_the_same_accessor_whichever_access_makes_it() {
    let holders = "[[Map.prototype, 'size'], [Object.prototype, '__proto__'], [RegExp.prototype, 'flags'], \
        [Symbol.prototype, 'description'], [ArrayBuffer.prototype, 'byteLength'], \
        [Object.getPrototypeOf(Uint8Array.prototype), 'length'], [Array, Symbol.species]]";
    // Described first: the descriptor makes each accessor.
    let described = in_fresh_context(&format!(
        "(() => {{ {DESCRIBE} return {holders}.map(([h, k]) => describe(h, k)) }})()"
    ));
    assert_eq!(described, ACCESSORS);
    // Used first (a read through the getter, a write through the setter), then described.
    let used = in_fresh_context(&format!(
        "(() => {{ {DESCRIBE} \
           const uses = [new Map([[1, 2]]).size, Object.getPrototypeOf([]) === Array.prototype, /a/g.flags, \
             Symbol('s').description, new ArrayBuffer(3).byteLength, new Uint8Array(4).length, \
             Array[Symbol.species] === Array]; \
           const o = {{}}; o.__proto__ = Array.prototype; uses.push(Array.isArray(o), o instanceof Array); \
           return [uses, {holders}.map(([h, k]) => describe(h, k))] }})()"
    ));
    assert_eq!(
        used,
        format!(r#"[[1,true,"g","s",3,4,true,false,true],{ACCESSORS}]"#)
    );
    // The same in a sandbox VM, after the bootstrap.
    check(
        &format!("{DESCRIBE} return {holders}.map(([h, k]) => describe(h, k))"),
        &format!("completed {ACCESSORS}"),
    );
}

#[test]
fn a_built_in_accessor_not_made_yet_keeps_its_kind_through_every_operation() {
    let answer = in_fresh_context(
        "(() => {
          const size = (h) => Object.getOwnPropertyDescriptor(h, 'size');
          // Freezing reads each property's flags before any accessor is made: accessors stay
          // accessors (a data property would be made read-only), and become non-configurable.
          Object.freeze(Map.prototype);
          const frozen = size(Map.prototype);
          const afterFreeze = [typeof frozen.get, 'writable' in frozen, frozen.configurable,
            new Map([[1, 2], [3, 4]]).size, Object.isFrozen(Map.prototype)];
          // The same getter on every read.
          const same = size(Set.prototype).get === size(Set.prototype).get;
          // A receiver that owns an accessor refuses a plain set (OrdinarySet), made or not.
          const refused = Reflect.set({}, 'size', 1, Set.prototype)
            || Reflect.set({}, 'byteLength', 1, DataView.prototype);
          // Deleted and redefined before it was made.
          delete Set.prototype.size;
          const deleted = ['size' in Set.prototype, new Set([1]).size];
          Object.defineProperty(ArrayBuffer.prototype, 'byteLength', { value: 7 });
          const redefined = [new ArrayBuffer(2).byteLength,
            Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').writable];
          // Listed keys and enumerability are unchanged by making them.
          const keysBefore = Reflect.ownKeys(RegExp.prototype).map(String).join();
          /x/y.sticky;
          const keysAfter = Reflect.ownKeys(RegExp.prototype).map(String).join();
          return [afterFreeze, same, refused, deleted, redefined, keysBefore === keysAfter,
            Object.keys(RegExp.prototype).length, RegExp.prototype.propertyIsEnumerable('sticky')];
        })()",
    );
    assert_eq!(
        answer,
        "[[\"function\",false,false,2,true],true,false,[false,null],[7,false],true,0,false]"
    );
}
