// The guards of the code mode bootstrap (bootstrap.js), loaded into a VM on the first access to
// a deferred built-in (see `instantiate` there and deferred.rs), so a VM whose program touches no
// guarded built-in never loads this code. Compiled once per process to bytecode, like the
// bootstrap.
//
// Its one function receives what it uses of the bootstrap's captures (`env`, a null-prototype
// object) and returns the kit: `method(holderIndex, name, original)` makes the guard of a deferred
// method, `ctor(index)` the guard of `guardedCtors[index]` (once). Each guard's maker is built
// only when asked (`findMaker`). All of it runs after guest code may have run: it uses `env`
// only, never a global or a property of a built-in, and it assigns no array element (a guest
// setter on Array.prototype could see it).
//
// Adding a guard: add the name to deferred.rs `GUARDED_METHODS` (or the constructor to
// `guardedCtors` in bootstrap.js) and its case to `findMaker` here. A deferred name without a case throws when it
// is first accessed; the sandbox test `deferred_built_ins_keep_the_keys_order_and_descriptors_of_a_plain_vm`
// accesses every one.
//
// Deadline guards. The interrupt handler runs between bytecode instructions (every ~10,000
// calls and back-edges), never inside a native built-in, so a native whose single call is
// expensive overruns the deadline by its own cost, and a loop of such calls by many times that.
// Each expensive built-in is therefore bounded (the table in docs/builtins-audit.md says how and
// what one call can still cost): an operand cap with a catchable RangeError, an interruptible JS
// replacement, and a poll point (`poll`) before any native call that may do more than
// `POLL_WORK` units of work, so a loop of calls ends within one call's cost.
(function (env) {
  'use strict';
  const {
    apply, ARRAY_CTOR, ARRAY_PROTO, ARRAY_SORT_MAX, arrayBufferByteLength, BUILD_MAX,
    COMPILER_COUNT, construct, create, defineProperty, getOwnPropertyDescriptor, getPrototypeOf,
    GLOBAL, guardedCtors, hasOwn, hostIsProxy, isArray, isObjectValue, JOIN_MAX, hostGuardFamily,
    hostPart, JSON_OBJECT, JSON_TEXT_MAX, KEYS_MAX, maxScan, ObjectCtor, poll, POLL_WORK, pollSoon,
    RangeErrorCtor, REFLECT, SCAN_MAX, SEARCH_PART, setPrototypeOf, sharedByteLength, SORT_MAX,
    SOURCE_MAX, STRING_PROTO, symbolIterator, symbolSpecies, TEXT_MAX, TYPED_ARRAY_CTOR,
    TYPED_ARRAY_PROTO, TypedArrayCtor, typedArrayLength, TypeErrorCtor,
  } = env;
  // A descriptor reused by every guard's name and length (a fresh descriptor object per definition
  // cost a tenth of a fresh VM once). It is emptied after use, so it holds no reference. Null
  // prototype and own fields: guards are made after guest code may have run, and defineProperty
  // must read nothing the guest can add to Object.prototype.
  const fixedSlot = create(null);
  fixedSlot.value = undefined;
  fixedSlot.writable = false;
  fixedSlot.enumerable = false;
  fixedSlot.configurable = true;
  // Gives `guarded` the name and length of `original` (built-ins' own are read-only).
  function mirror(guarded, original) {
    fixedSlot.value = original.name;
    defineProperty(guarded, 'name', fixedSlot);
    fixedSlot.value = original.length;
    defineProperty(guarded, 'length', fixedSlot);
    fixedSlot.value = undefined;
  }

  // Array builtins whose C loops never poll the interrupt handler would scan a sparse array or an
  // array-like of length up to 2^53 for hours, beyond any deadline. Before such a builtin runs,
  // the length it will read is checked: a data property (or the intrinsic typed-array getter)
  // holding a primitive no larger than `SCAN_MAX`. Proxies and accessor lengths are refused, since
  // they could answer differently when the builtin reads the length again. Returns the length.
  function checkScan(value, limit) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return 0;
    for (let holder = value; holder !== null; holder = getPrototypeOf(holder)) {
      if (hostIsProxy(holder)) throw new TypeErrorCtor('array methods cannot run on a Proxy in code mode');
      const descriptor = getOwnPropertyDescriptor(holder, 'length');
      if (descriptor === undefined) continue;
      let length;
      if (hasOwn(descriptor, 'value')) {
        length = descriptor.value;
      } else if (descriptor.get === typedArrayLength) {
        if (holder !== value) return 0;
        length = apply(typedArrayLength, value, []);
      } else {
        throw new TypeErrorCtor('array methods need a plain length in code mode');
      }
      if (length !== null && (typeof length === 'object' || typeof length === 'function')) {
        throw new TypeErrorCtor('array methods need a primitive length in code mode');
      }
      const scan = +length;
      if (scan > limit) throw new RangeErrorCtor('array-like too long to scan in code mode: ' + length);
      return scan > 0 ? scan : 0;
    }
    return 0;
  }

  function toText(value) {
    return typeof value === 'string' ? value : `${value}`;
  }

  // BigInt needs no guard: the vendored QuickJS caps BigInts at 64 Kbit (the slowest operation,
  // to text in radix 10, ~10 ms) and counts their quadratic work and the text they parse toward
  // the interrupt counter (vendor/rquickjs-sys/PATCHES.md).

  // eval and the Function constructors: compile cost grows superlinearly with the source.
  function checkSource(length) {
    poll();
    if (length > SOURCE_MAX) {
      throw new RangeErrorCtor('source too long to compile in code mode: ' + length + ' characters (at most ' + SOURCE_MAX + ')');
    }
  }

  // From an array-like (no iterator) the native loop never polls: its length is capped.
  function checkArrayLike(items) {
    if (isObjectValue(items)) {
      const iterator = items[symbolIterator];
      if (iterator === undefined || iterator === null) checkScan(items, SCAN_MAX);
    }
  }
  function isBufferLike(value) {
    try {
      apply(typedArrayLength, value, []);
      return true;
    } catch (_) {}
    try {
      apply(arrayBufferByteLength, value, []);
      return true;
    } catch (_) {}
    if (sharedByteLength === undefined) return false;
    try {
      apply(sharedByteLength, value, []);
      return true;
    } catch (_) {
      return false;
    }
  }
  // A descriptor for a guard's own constants (`prototype`, `BYTES_PER_ELEMENT`): read-only, as
  // the originals' are. Null prototype, like fixedSlot.
  const constSlot = create(null);
  constSlot.value = undefined;
  constSlot.writable = false;
  constSlot.enumerable = false;
  constSlot.configurable = false;
  function defineConst(target, name, value) {
    constSlot.value = value;
    defineProperty(target, name, constSlot);
    constSlot.value = undefined;
  }

  // By index in guardedCtors: the guard, once made (a null-prototype record: no array element
  // is assigned here).
  const ctorGuards = create(null);

  // The guard of guardedCtors[index], made on first use.
  function ctorGuard(index) {
    let guarded = ctorGuards[index];
    if (guarded !== undefined) return guarded;
    const original = guardedCtors[index];
    if (index < COMPILER_COUNT) {
      guarded = function (...args) {
        let total = 0;
        for (let i = 0; i < args.length; i++) {
          args[i] = toText(args[i]);
          total += args[i].length;
        }
        checkSource(total);
        return new.target === undefined ? apply(original, undefined, args) : construct(original, args, new.target);
      };
      if (index > 0) setPrototypeOf(guarded, ctorGuard(0));
    } else {
      guarded = function (...args) {
        if (new.target === undefined) return apply(original, undefined, args);
        const items = args[0];
        if (isObjectValue(items) && !isArray(items) && !isBufferLike(items)) {
          pollSoon();
          checkArrayLike(items);
        }
        return construct(original, args, new.target);
      };
      defineConst(guarded, 'BYTES_PER_ELEMENT', original.BYTES_PER_ELEMENT);
      setPrototypeOf(guarded, TypedArrayCtor);
    }
    mirror(guarded, original);
    defineConst(guarded, 'prototype', original.prototype);
    ctorGuards[index] = guarded;
    return guarded;
  }

  // A method (not a constructor) that polls before calling the original.
  const pollMaker = (original) => ({
    method(...args) {
      pollSoon();
      return apply(original, this, args);
    },
  }).method;

  function scanMaker(name, checkArgs) {
    // push, pop and at touch one end of the array: only absurd lengths are refused.
    const limit = name === 'push' || name === 'pop' || name === 'at' ? maxScan : SCAN_MAX;
    return (original) => ({
      method(...args) {
        let work = checkScan(this, limit);
        if (checkArgs) for (let i = 0; i < args.length; i++) work += checkScan(args[i], limit);
        if (checkArgs && work > SCAN_MAX) {
          throw new RangeErrorCtor('array-likes too long to ' + name + ' in code mode: ' + work + ' elements in all (at most ' + SCAN_MAX + ')');
        }
        if (work > POLL_WORK && limit === SCAN_MAX) poll();
        if (name === 'join' && work > JOIN_MAX) throw new RangeErrorCtor('array too long to join in code mode: ' + work);
        if ((name === 'sort' || name === 'toSorted') && args[0] === undefined && work > ARRAY_SORT_MAX) {
          throw new RangeErrorCtor('array too long to sort without a comparator in code mode: ' + work + ' (at most ' + ARRAY_SORT_MAX + '); pass a comparator');
        }
        return apply(original, this, args);
      },
    }).method;
  }

  // flat / flatMap in JS (ES2024 23.1.3.13 FlattenIntoArray): the native one visits every index of
  // every nested array without polling; this loop reaches the interrupt handler.
  const dataDescriptor = create(null);
  dataDescriptor.value = undefined;
  dataDescriptor.writable = true;
  dataDescriptor.enumerable = true;
  dataDescriptor.configurable = true;

  function createData(target, index, value) {
    dataDescriptor.value = value;
    try {
      defineProperty(target, index, dataDescriptor);
    } finally {
      dataDescriptor.value = undefined;
    }
  }

  function toLength(value) {
    let length = +value;
    if (!(length > 0)) return 0;
    if (length > 9007199254740991) return 9007199254740991;
    return length - (length % 1);
  }

  function toObjectThis(value, name) {
    if (value === undefined || value === null) {
      throw new TypeErrorCtor('Array.prototype.' + name + ' called on null or undefined');
    }
    return ObjectCtor(value);
  }

  function arraySpeciesCreate(original) {
    if (!isArray(original)) return [];
    let C = original.constructor;
    if (isObjectValue(C)) {
      C = C[symbolSpecies];
      if (C === null) C = undefined;
    }
    if (C === undefined) return [];
    return new C(0);
  }

  function flattenInto(target, source, sourceLength, start, depth, mapper, thisArg) {
    let targetIndex = start;
    for (let sourceIndex = 0; sourceIndex < sourceLength; sourceIndex++) {
      if (!(sourceIndex in source)) continue;
      let element = source[sourceIndex];
      if (mapper !== undefined) element = apply(mapper, thisArg, [element, sourceIndex, source]);
      if (depth > 0 && isArray(element)) {
        targetIndex = flattenInto(target, element, toLength(element.length), targetIndex, depth - 1);
      } else {
        if (targetIndex >= 9007199254740991) throw new TypeErrorCtor('array too long');
        createData(target, targetIndex, element);
        targetIndex++;
      }
    }
    return targetIndex;
  }

  // String search: QuickJS compares naively, O(n*m). The guards of the string searches
  // (indexOf, lastIndexOf, includes, split, replace, replaceAll) are a part of their own
  // (bootstrap/search.js), loaded on the first of them a program touches.
  function thisText(value, name) {
    if (value === undefined || value === null) {
      throw new TypeErrorCtor('String.prototype.' + name + ' called on null or undefined');
    }
    return toText(value);
  }

  function isSearch(name) {
    return name === 'indexOf' || name === 'lastIndexOf' || name === 'includes' || name === 'split'
      || name === 'replace' || name === 'replaceAll';
  }

  // The search part's maker finder, loaded once (a failed load, out of memory or stack, is
  // tried again on the next access). It gets this kit's env and the helpers it shares.
  let searchFinder;
  function searchMakers() {
    if (searchFinder === undefined) {
      env.createData = createData;
      env.thisText = thisText;
      env.toText = toText;
      searchFinder = hostPart(SEARCH_PART)(env);
    }
    return searchFinder;
  }

  // Sorting without a comparator never polls (a comparator is guest code, which does).
  // Joining formats every number natively: capped like Array.prototype.join.

  // Replacing the global eval makes a guest's direct `eval(...)` an indirect one (global scope).

  // Linear natives bounded by the memory limit: a poll point, so a loop of calls stops within
  // one call; JSON.parse also caps its text, JSON.stringify walks through an identity replacer.
  // JSON.stringify walks its value natively; through a replacer function it calls JS for every
  // value, so the walk polls, and each key and string it will escape is measured first. A
  // property-list (array) replacer keeps the native walk (poll point only).
  function checkSerialized(text) {
    if (typeof text === 'string' && text.length > TEXT_MAX) {
      throw new RangeErrorCtor('string too long to serialize in code mode: ' + text.length + ' characters (at most ' + TEXT_MAX + ')');
    }
  }
  const identity = (key, value) => {
    checkSerialized(key);
    checkSerialized(value);
    return value;
  };
  // Building a string costs ~4 ns a character at the largest sizes: results are capped.
  // A result larger than the whole heap is left to the native, which fails at once allocating it
  // ("code mode memory limit exceeded").
  function checkBuilt(length) {
    if (length > POLL_WORK) pollSoon();
    if (length > BUILD_MAX && length <= maxScan * 8) {
      throw new RangeErrorCtor('string result too long in code mode: ' + length + ' characters (at most ' + BUILD_MAX + ')');
    }
  }
  function padMaker(name) {
    return (original) => ({
      method(maxLength, fillString) {
        const string = thisText(this, name);
        const length = +maxLength;
        if (length > string.length) checkBuilt(length);
        return apply(original, string, [length, fillString]);
      },
    }).method;
  }
  function checkText(text) {
    if (text.length > POLL_WORK) pollSoon();
    if (text.length > TEXT_MAX) {
      throw new RangeErrorCtor('string too long for this operation in code mode: ' + text.length + ' characters (at most ' + TEXT_MAX + ')');
    }
  }

  // Own-key walks cost ~0.3-0.5 us a property, natively. A plain object's property count is
  // bounded by the heap only (see the audit); an array's or typed array's indices are capped.
  function checkIndexed(value) {
    if (!isObjectValue(value) || hostIsProxy(value)) return;
    let length = 0;
    if (isArray(value)) {
      length = value.length;
    } else {
      try {
        length = apply(typedArrayLength, value, []);
      } catch (_) {
        return;
      }
    }
    if (length > KEYS_MAX) {
      throw new RangeErrorCtor('too many elements to list as properties in code mode: ' + length + ' (at most ' + KEYS_MAX + ')');
    }
  }

  // The maker of the guard of `deferredHolders[holderIndex][name]`, or undefined. Each case
  // builds its maker only when asked, so a VM makes only the guards its program touches.
  function findMaker(holderIndex, name) {
    // The family of lists of deferred.rs `GUARDED_METHODS` the method is in, if any.
    const family = hostGuardFamily(holderIndex, name);
    if (family === 'unpolledScans') return scanMaker(name, false);
    if (holderIndex === ARRAY_PROTO && name === 'concat') return scanMaker(name, true);
    if (holderIndex === STRING_PROTO && isSearch(name)) return searchMakers()(name);
    if (holderIndex === STRING_PROTO && (name === 'padStart' || name === 'padEnd')) return padMaker(name);
    if (holderIndex === STRING_PROTO && name === 'concat') return pollMaker;
    if (family === 'typedArrayScans') return pollMaker;
    if (family === 'objectPolls') return pollMaker;
    if (holderIndex === ARRAY_CTOR && name === 'of') return pollMaker;
    if (holderIndex === ARRAY_PROTO && name === 'flat') {
      return () => ({
        method(depth) {
          const source = toObjectThis(this, 'flat');
          const sourceLength = toLength(source.length);
          let depthNumber = 1;
          if (depth !== undefined) {
            depthNumber = +depth;
            if (depthNumber !== depthNumber || depthNumber < 0) depthNumber = 0;
            else if (depthNumber !== Infinity) depthNumber -= depthNumber % 1;
          }
          const target = arraySpeciesCreate(source);
          flattenInto(target, source, sourceLength, 0, depthNumber);
          return target;
        },
      }).method;
    }
    if (holderIndex === ARRAY_PROTO && name === 'flatMap') {
      return () => ({
        method(mapper, thisArg) {
          const source = toObjectThis(this, 'flatMap');
          const sourceLength = toLength(source.length);
          if (typeof mapper !== 'function') throw new TypeErrorCtor('flatMap mapper is not a function');
          const target = arraySpeciesCreate(source);
          flattenInto(target, source, sourceLength, 0, 1, mapper, thisArg);
          return target;
        },
      }).method;
    }
    if (holderIndex === TYPED_ARRAY_PROTO && (name === 'sort' || name === 'toSorted')) {
      return (original) => ({
        method(comparefn) {
          if (comparefn === undefined) {
            const length = apply(typedArrayLength, this, []);
            if (length > SORT_MAX) throw new RangeErrorCtor('typed array too long to sort without a comparator in code mode: ' + length);
            if (length > POLL_WORK) poll();
          }
          return apply(original, this, [comparefn]);
        },
      }).method;
    }
    if (holderIndex === TYPED_ARRAY_PROTO && name === 'join') {
      return (original) => ({
        method(...args) {
          const length = apply(typedArrayLength, this, []);
          if (length > JOIN_MAX) throw new RangeErrorCtor('typed array too long to join in code mode: ' + length);
          if (length > POLL_WORK) poll();
          return apply(original, this, args);
        },
      }).method;
    }
    if (holderIndex === GLOBAL && name === 'eval') {
      return (original) => ({
        eval(source) {
          if (typeof source !== 'string') return source;
          checkSource(source.length);
          return apply(original, undefined, [source]);
        },
      }).eval;
    }
    if (holderIndex === JSON_OBJECT && name === 'parse') {
      return (original) => ({
        method(...args) {
          const source = toText(args[0]);
          if (source.length > POLL_WORK) poll();
          if (source.length > JSON_TEXT_MAX) {
            throw new RangeErrorCtor('JSON text too long to parse in code mode: ' + source.length + ' characters (at most ' + JSON_TEXT_MAX + ')');
          }
          args[0] = source;
          return apply(original, undefined, args);
        },
      }).method;
    }
    if (holderIndex === JSON_OBJECT && name === 'stringify') {
      return (original) => ({
        method(...args) {
          poll();
          const replacer = args[1];
          if (typeof replacer === 'function') {
            args[1] = function (key, value) {
              checkSerialized(key);
              const result = apply(replacer, this, [key, value]);
              checkSerialized(result);
              return result;
            };
          } else if (!isArray(replacer)) {
            args[1] = identity;
          }
          return apply(original, undefined, args);
        },
      }).method;
    }
    if (holderIndex === STRING_PROTO && name === 'repeat') {
      return (original) => ({
        method(count) {
          const string = thisText(this, 'repeat');
          const times = +count;
          if (string.length > 0 && times > 0) checkBuilt(string.length * times);
          return apply(original, string, [times]);
        },
      }).method;
    }
    if (holderIndex === REFLECT && name === 'ownKeys') {
      return (original) => ({
        method(...args) {
          pollSoon();
          checkIndexed(args[0]);
          return apply(original, this, args);
        },
      }).method;
    }
    if ((holderIndex === ARRAY_CTOR || holderIndex === TYPED_ARRAY_CTOR) && name === 'from') {
      return (original) => ({
        method(...args) {
          pollSoon();
          checkArrayLike(args[0]);
          return apply(original, this, args);
        },
      }).method;
    }
    if (family === 'stringScans') {
      return (original) => ({
        method(...args) {
          if (typeof this === 'string' && this.length <= POLL_WORK && name !== 'localeCompare') {
            return apply(original, this, args);
          }
          const string = thisText(this, name);
          checkText(string);
          if (name === 'localeCompare') {
            args[0] = toText(args[0]);
            checkText(args[0]);
          }
          return apply(original, string, args);
        },
      }).method;
    }
    if (family === 'uriCodings') {
      return (original) => ({
        method(...args) {
          const text = toText(args[0]);
          checkText(text);
          return apply(original, undefined, [text]);
        },
      }).method;
    }
    if (family === 'objectScans') {
      return (original) => ({
        method(...args) {
          pollSoon();
          for (let k = 0; k < args.length; k++) checkIndexed(args[k]);
          return apply(original, this, args);
        },
      }).method;
    }
    return undefined;
  }

  // Makes the guard of `deferredHolders[holderIndex][name]` around `original`.
  function method(holderIndex, name, original) {
    const maker = findMaker(holderIndex, name);
    if (maker === undefined) throw new TypeErrorCtor('code mode has no guard for ' + name);
    const guarded = maker(original);
    mirror(guarded, original);
    return guarded;
  }

  return { __proto__: null, method, ctor: ctorGuard };
})
