// Trusted bootstrap of one code mode run (see run.rs and bytecode.rs). A script compiled once
// per process to bytecode and loaded into each fresh VM before any guest code; its value, the
// function below, receives the host's native functions and returns the control object only Rust
// can reach. Every built-in the bridge relies on is captured here, so later guest tampering with
// JSON, Promise, Object.prototype or the installed globals cannot change what the bridge does.
// Nothing defined here is reachable from guest code except the functions installed as globals,
// which are frozen. Each part of the bootstrap is one parenthesized function, strict within.
(function (natives, maxScan) {
  'use strict';
  const { hostCall, hostLocal, hostText, hostEmit, hostYield, hostFinish, hostPoll } = natives;
  const { hostTimer, hostClearTimer, hostOutputRemaining, hostDefer, hostPart } = natives;
  const { hostIntrinsics, hostMakeIntrinsics } = natives;
  const maxCallArgs = natives.maxCallArgs;
  const maxOutput = natives.maxOutput;
  const globalObject = globalThis;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const SyntaxErrorCtor = SyntaxError;
  const RangeErrorCtor = RangeError;
  const ArrayProto = Array.prototype;
  const FunctionProto = Function.prototype;
  const StringCtor = String;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const isFrozen = Object.isFrozen;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const create = Object.create;
  const hasOwn = Object.hasOwn;
  const ownKeys = Reflect.ownKeys;
  const apply = Reflect.apply;
  const promiseThen = Promise.prototype.then;
  const AsyncFunction = getPrototypeOf(async function () {}).constructor;
  const isArray = Array.isArray;
  const objectKeys = Object.keys;
  const toWellFormed = String.prototype.toWellFormed;
  const bigintToString = BigInt.prototype.toString;
  const ErrorProto = ErrorCtor.prototype;
  const InternalErrorProto = typeof InternalError === 'function' ? InternalError.prototype : undefined;
  const arrayPush = ArrayProto.push;
  const arrayPop = ArrayProto.pop;
  const arrayIncludes = ArrayProto.includes;

  // V8-style stack hooks hand the functions on the stack to guest code (CallSite#getFunction),
  // which would expose the internals below. Pin them off before any guest code runs.
  defineProperty(ErrorCtor, 'prepareStackTrace', {
    value: undefined, writable: false, enumerable: false, configurable: false,
  });

  // Everything the parts loaded later use is captured now, before any guest code: guest
  // tampering later changes nothing they do. (No built-in is wrapped: the engine meters its
  // natives' work itself, codemode-quickjs-sys patch 10.)
  const StringProto = String.prototype;
  const construct = Reflect.construct;
  const stringSlice = StringProto.slice;
  const stringIndexOf = StringProto.indexOf;
  const monotonicNow = performance.now;
  const ObjectCtor = Object;
  // Captures for the runtime globals (bootstrap/globals.js).
  const NumberCtor = Number;
  // Eight families of built-ins are made on first use (codemode-quickjs-sys patch 12), maybe by
  // guest code: their captures are taken by this hook, which QuickJS calls with a family's
  // number and constructors as it makes the family, before anything else can reach it. It reads
  // only own properties of those fresh objects. `hostMakeIntrinsics(mask)` makes the families
  // whose bits are set.
  const MAP_SET = 1 << 0;
  const TYPED_ARRAYS = 1 << 1;
  const DATE = 1 << 3;
  const DOM_EXCEPTION = 1 << 5;
  let MapCtor, SetCtor, WeakMapCtor, mapForEach, mapSet, mapGet, mapHas, setForEach, setAdd;
  let weakGet, weakSet;
  let Uint8ArrayCtor, DataViewCtor, isView, bufferSlice, typedArraySlice, arrayBufferByteLength;
  let typedArrayBuffer, typedArrayOffset, typedArrayByteLength;
  let dataViewBuffer, dataViewOffset, dataViewByteLength;
  let DateCtor, DateProto, dateNow, dateGetTime, DOMExceptionCtor;
  hostIntrinsics(function captureIntrinsics(family, ...ctors) {
    if (family === 0) {
      // Map, Set, WeakMap, WeakSet.
      MapCtor = ctors[0];
      SetCtor = ctors[1];
      WeakMapCtor = ctors[2];
      const MapProto = MapCtor.prototype;
      const SetProto = SetCtor.prototype;
      const WeakMapProto = WeakMapCtor.prototype;
      mapForEach = MapProto.forEach;
      mapSet = MapProto.set;
      mapGet = MapProto.get;
      mapHas = MapProto.has;
      setForEach = SetProto.forEach;
      setAdd = SetProto.add;
      weakGet = WeakMapProto.get;
      weakSet = WeakMapProto.set;
    } else if (family === 1) {
      // ArrayBuffer, SharedArrayBuffer, Uint8ClampedArray, Int8Array, Uint8Array, ..., DataView.
      const ArrayBufferCtor = ctors[0];
      const ArrayBufferProto = ArrayBufferCtor.prototype;
      Uint8ArrayCtor = ctors[4];
      DataViewCtor = ctors[ctors.length - 1];
      const DataViewProto = DataViewCtor.prototype;
      const typedArrayProto = getPrototypeOf(Uint8ArrayCtor.prototype);
      isView = ArrayBufferCtor.isView;
      bufferSlice = ArrayBufferProto.slice;
      typedArraySlice = typedArrayProto.slice;
      arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBufferProto, 'byteLength').get;
      typedArrayBuffer = getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
      typedArrayOffset = getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
      typedArrayByteLength = getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
      dataViewBuffer = getOwnPropertyDescriptor(DataViewProto, 'buffer').get;
      dataViewOffset = getOwnPropertyDescriptor(DataViewProto, 'byteOffset').get;
      dataViewByteLength = getOwnPropertyDescriptor(DataViewProto, 'byteLength').get;
    } else if (family === 3) {
      DateCtor = ctors[0];
      DateProto = DateCtor.prototype;
      dateNow = DateCtor.now;
      dateGetTime = DateProto.getTime;
    } else if (family === 5) {
      DOMExceptionCtor = ctors[0];
    }
  });
  // structuredClone's copy of a Date (undefined for anything else: no Date exists before the
  // family is made), and its DOMException, whose family is made by the first one thrown.
  function cloneDate(input, proto) {
    return proto === DateProto ? new DateCtor(apply(dateGetTime, input, [])) : undefined;
  }
  function newDOMException(message, name) {
    if (DOMExceptionCtor === undefined) hostMakeIntrinsics(DOM_EXCEPTION);
    return new DOMExceptionCtor(message, name);
  }
  const fromCharCode = String.fromCharCode;
  const codePointAt = String.prototype.codePointAt;
  const charCodeAt = String.prototype.charCodeAt;
  const parseIntFn = parseInt;
  const parseFloatFn = parseFloat;
  // Once the host says stop, every later poll throws at once (the host's flag is sticky too).
  let stopped = false;
  function poll() {
    if (stopped || hostPoll()) {
      stopped = true;
      // No catchable error here: a guest that swallows errors in a loop would call the next
      // expensive built-in before the interrupt handler's next turn (every ~10,000 ticks). This
      // loop reaches it at once, and the handler, whose flags are sticky, answers "stop" with an
      // exception no guest `catch` can take.
      for (;;) {}
    }
  }

  // A poll point for calls of unknown cost, asking the host at most once per millisecond (a
  // host call costs ~0.2 us, the clock ~0.04 us): a call that took longer always polls.
  let nextPoll = 0;
  function pollSoon() {
    const now = monotonicNow();
    if (stopped || now >= nextPoll) {
      nextPoll = now + 1;
      poll();
    }
  }

  // The bootstrap's parts loaded on first use, by index (bytecode.rs `Part`).
  const GLOBALS_PART = 1;
  const READINGS_PART = 2;
  const CUT_PART = 3;

  // Makes the runtime global `name` (called by QuickJS on the first access to a deferred
  // runtime global, see `install`, possibly in the middle of guest code: it reads nothing the
  // guest can reach).
  function instantiate(holder, name) {
    return runtimeGlobal(name);
  }

  // Promise capabilities of unsettled bridge calls and yields, keyed by request id.
  const resolvers = create(null);
  const rejecters = create(null);
  let main;
  let finished = false;

  function replacer(key, value) {
    switch (typeof value) {
      case 'function': throw new TypeErrorCtor('a function cannot cross the code mode bridge');
      case 'symbol': throw new TypeErrorCtor('a symbol cannot cross the code mode bridge');
      case 'bigint': throw new TypeErrorCtor('a BigInt cannot cross the code mode bridge');
      case 'string':
        // Refused before it is flattened and copied: one string can exceed the whole budget.
        // Every refusal polls: a guest may retry refused calls in a loop (see makeBridge).
        if (value.length > maxCallArgs) {
          poll();
          throw new RangeErrorCtor('code mode call arguments exceed ' + maxCallArgs + ' bytes');
        }
        return wellFormed(value);
      default: return value;
    }
  }

  // Lone surrogates become U+FFFD: every string that reaches the host is valid Unicode.
  function wellFormed(text) {
    return apply(toWellFormed, text, []);
  }

  // JSON text of the guest's arguments, refused by size before the host copies it.
  function encodeCall(args) {
    const text = encodeArgs(args);
    if (text.length > maxCallArgs) {
      poll();
      throw new RangeErrorCtor('code mode call arguments exceed ' + maxCallArgs + ' bytes');
    }
    return text;
  }

  // The safe adapter for results (the return value, json() and text() of non-strings): JSON
  // semantics that never fail a finished program. Functions, symbols and `undefined` are dropped
  // from objects and become null in arrays; an Error becomes { name, message }; a BigInt becomes
  // its decimal string; a cycle becomes "[Circular]"; nesting past SAFE_DEPTH becomes
  // "[Too deep]"; a getter, toJSON or Proxy trap that throws makes its value "[Unserializable]".
  // Stops early (OVER) once the value is certainly larger than `budget` characters.
  const SAFE_DEPTH = 100;
  const OVER = freeze(create(null));
  let safeBudget = 0;

  function charge(size) {
    safeBudget -= size;
    if (safeBudget < 0) throw OVER;
  }

  function isError(value) {
    for (let proto = getPrototypeOf(value); proto !== null; proto = getPrototypeOf(proto)) {
      if (proto === ErrorProto) return true;
    }
    return false;
  }

  function safeString(value) {
    return typeof value === 'string' ? wellFormed(value) : undefined;
  }

  // A property read through getters and Proxy traps; a throw makes the value UNREADABLE.
  const UNREADABLE = freeze(create(null));
  function read(holder, key) {
    try {
      return holder[key];
    } catch (error) {
      if (error === null) throw error;
      return UNREADABLE;
    }
  }

  let safeDepth = SAFE_DEPTH;

  function safeValue(value, depth, ancestors, key) {
    if (value === UNREADABLE) { charge(16); return '[Unserializable]'; }
    try {
      if (value !== null && (typeof value === 'object' || typeof value === 'bigint')) {
        const toJSON = value.toJSON;
        if (typeof toJSON === 'function') value = apply(toJSON, value, [key]);
      }
      switch (typeof value) {
        case 'string': charge(value.length + 2); return wellFormed(value);
        case 'number': case 'boolean': charge(8); return value;
        case 'bigint': { const text = apply(bigintToString, value, []); charge(text.length + 2); return text; }
        case 'undefined': case 'function': case 'symbol': return undefined;
        default: break;
      }
      if (value === null) { charge(4); return null; }
      if (depth >= safeDepth) { charge(12); return '[Too deep]'; }
      if (apply(arrayIncludes, ancestors, [value])) { charge(12); return '[Circular]'; }
      if (isError(value)) {
        const out = create(null);
        out.name = safeString(value.name);
        out.message = safeString(value.message);
        charge(24);
        return out;
      }
      apply(arrayPush, ancestors, [value]);
      let out;
      if (isArray(value)) {
        out = [];
        const length = value.length;
        charge(2);
        for (let i = 0; i < length; i++) {
          const item = safeValue(read(value, i), depth + 1, ancestors, '' + i);
          define(out, i, item === undefined ? null : item, true, true, true);
          charge(1);
        }
      } else {
        out = create(null);
        const keys = objectKeys(value);
        charge(2);
        for (let i = 0; i < keys.length; i++) {
          const name = keys[i];
          const item = safeValue(read(value, name), depth + 1, ancestors, name);
          if (item !== undefined) {
            charge(name.length + 4);
            define(out, wellFormed(name), item, true, true, true);
          }
        }
      }
      apply(arrayPop, ancestors, []);
      return out;
    } catch (error) {
      if (error === OVER) throw OVER;
      if (error === null) throw error; // out of memory: never swallowed
      apply(arrayPop, ancestors, []);
      return '[Unserializable]';
    }
  }

  // JSON text of a result value through the safe adapter, or OVER when it is certainly larger
  // than `limit` bytes.
  function safeEncode(value, limit) {
    return safeEncodeDepth(value, limit, SAFE_DEPTH);
  }

  function safeEncodeDepth(value, limit, depth) {
    safeBudget = limit;
    safeDepth = depth;
    let safe;
    try {
      safe = safeValue(value, 0, [], '');
    } catch (error) {
      if (error === OVER) return OVER;
      throw error;
    }
    const text = stringify(safe);
    return text === undefined ? 'null' : text;
  }

  // JSON text of a guest value; getters, toJSON and Proxy traps run here as guest code.
  function encode(value) {
    const text = stringify(value, replacer);
    return text === undefined ? 'null' : text;
  }

  function encodeArgs(args) {
    let text = '[';
    const count = args.length;
    for (let i = 0; i < count; i++) {
      if (i > 0) text += ',';
      text += encode(args[i]);
    }
    return text + ']';
  }

  // A bridge call polls through its native, which checks the deadline first and refuses once
  // the run must stop; every refusal (by the native, or of oversized arguments while encoding)
  // goes through `poll()`, which stops the run for good once it must stop, so a guest that
  // catches refusals in a loop encodes at most one more call past the deadline. No poll of its
  // own before encoding: a second native call per bridge call cost ~5% of a round trip.
  function makeBridge(index) {
    return freeze((...args) => new PromiseCtor((resolve, reject) => {
      const id = hostCall(index, encodeCall(args));
      if (typeof id === 'string') {
        poll();
        throw new ErrorCtor(id);
      }
      resolvers[id] = resolve;
      rejecters[id] = reject;
    }));
  }

  function makeLocal(index) {
    return freeze((...args) => new PromiseCtor((resolve) => {
      // `[value]` on success, the refusal message as a JSON string otherwise.
      const answer = parse(hostLocal(index, encodeCall(args)));
      if (typeof answer === 'string') {
        poll();
        throw new ErrorCtor(answer);
      }
      resolve(answer[0]);
    }));
  }

  // Hands one output item to the host; an item certainly over the budget is refused without
  // copying it (the host then stops the run as over its output limit).
  function emit(isJson, payload) {
    const over = payload === OVER || payload.length > maxOutput;
    const refusal = hostEmit(isJson, over ? '' : payload, over);
    if (refusal !== undefined) throw new ErrorCtor(refusal);
  }

  // The guest's globals are arrow functions: no prototype object to make and freeze in each VM.
  const text = (value) => {
    poll();
    if (typeof value === 'string') return emit(false, value.length > maxOutput ? OVER : wellFormed(value));
    if (value === undefined) return emit(false, 'undefined');
    emit(false, safeEncode(value, maxOutput));
  };

  const json = (value) => {
    poll();
    emit(true, safeEncode(value, maxOutput));
  };

  // The runtime globals models expect (bootstrap/globals.js): console, TextEncoder, TextDecoder,
  // structuredClone and the timers. `install` pins each to a stub and defers it, so a VM whose
  // program uses none of them never loads their code; the first access builds and deep-freezes
  // them all.
  const runtimeGlobalNames = ['console', 'TextEncoder', 'TextDecoder', 'structuredClone', 'setTimeout',
    'setInterval', 'clearTimeout', 'clearInterval'];
  const runtimeGlobalStub = freeze(create(null));
  let runtimeGlobals;

  function runtimeGlobal(name) {
    if (runtimeGlobals === undefined) {
      // Kept only once all are deep-frozen: if freezing throws (the guest's stack or memory ran
      // out), the next access starts over with fresh objects.
      hostMakeIntrinsics(MAP_SET | TYPED_ARRAYS); // the globals' captures of the families, above
      const made = hostPart(GLOBALS_PART)(partEnv());
      for (let i = 0; i < runtimeGlobalNames.length; i++) deepFreeze(made[runtimeGlobalNames[i]]);
      runtimeGlobals = made;
    }
    return runtimeGlobals[name];
  }

  // Runs one due timer (from the host; timers live in bootstrap/globals.js, so a timer exists
  // only once the runtime globals are built). False for an unknown timer.
  function fireTimer(id) {
    return runtimeGlobals !== undefined && runtimeGlobals.fireTimer(id);
  }

  const yield_control = () => new PromiseCtor((resolve) => {
    poll();
    const id = hostYield();
    resolvers[id] = resolve;
    rejecters[id] = resolve;
  });

  // The failure text of an uncaught guest value; never throws.
  function describe(error) {
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        const message = error.message;
        if (typeof message === 'string') {
          const name = error.name;
          if (typeof name !== 'string' || name === '') return message;
          return message === '' ? name : name + ': ' + message;
        }
        const text = stringify(error);
        if (typeof text === 'string') return text;
      }
      return StringCtor(error);
    } catch (_) {
      return 'uncaught guest exception';
    }
  }

  // An error the engine made for exhausted memory: `null` (it could not allocate an error
  // object) or an InternalError whose message says so.
  function outOfMemory(error) {
    if (error === null) return true;
    try {
      return InternalErrorProto !== undefined && getPrototypeOf(error) === InternalErrorProto
        && error.message === 'out of memory';
    } catch (_) {
      return false;
    }
  }

  // UTF-8 bytes of a well-formed string (what the host counts).
  function utf8Bytes(text) {
    let bytes = text.length;
    for (let i = 0; i < text.length; i++) {
      const unit = apply(charCodeAt, text, [i]);
      if (unit >= 0x80) bytes += unit >= 0x800 && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1;
    }
    return bytes;
  }

  // The program's value goes through the safe adapter: a finished program never fails on it.
  // A value too big for what is left of the output budget is cut to fit (`hostFinish` gets the
  // original size); one too big even to measure within the VM's memory ends as over the limit.
  // The last arguments of hostFinish say, for a value, that it is over the output budget or what
  // it measured before it was cut and, for a failure, that memory ran out.
  function succeed(value) {
    if (finished) return;
    let safe;
    try {
      safeBudget = maxScan;
      safeDepth = SAFE_DEPTH;
      safe = safeValue(value, 0, [], '');
    } catch (error) {
      if (error === OVER) {
        finished = true;
        hostFinish(true, '', true, 0);
        return;
      }
      fail(error);
      return;
    }
    finished = true;
    const text = safe === undefined ? 'null' : stringify(safe);
    const remaining = hostOutputRemaining();
    if (text.length * 3 <= remaining) return hostFinish(true, text, false, 0);
    const bytes = utf8Bytes(text);
    if (bytes <= remaining) return hostFinish(true, text, false, 0);
    let kept;
    try {
      kept = stringify(hostPart(CUT_PART)(partEnv())(safe, remaining));
    } catch (_) {
      return hostFinish(true, '', true, 0);
    }
    if (utf8Bytes(kept) > remaining) return hostFinish(true, '', true, 0);
    hostFinish(true, kept, false, bytes);
  }

  function fail(error) {
    if (finished) return;
    finished = true;
    let message = '';
    try {
      message = wellFormed(describe(error));
    } catch (_) {
      // Describing may itself run out of memory; the flag below still classifies it.
    }
    hostFinish(false, message, outOfMemory(error), 0);
  }

  // Installation runs once, before any guest code, over values only the installer made: JSON.parse
  // results, plain path objects and bootstrap closures. They hold own data properties only, so
  // reading them runs no code and needs no property descriptors. A frozen object is skipped: it
  // is either already walked or a bridge closure, whose own properties are primitives.
  function deepFreeze(value) {
    if (isFrozen(value)) return;
    freeze(value);
    if (isArray(value)) {
      // Our own arrays (JSON.parse results) hold indices and `length` only: walk the indices
      // rather than making a key list as long as the array.
      for (let i = 0; i < value.length; i++) {
        const child = value[i];
        if (child !== null && (typeof child === 'object' || typeof child === 'function') && !isFrozen(child)) {
          deepFreeze(child);
        }
      }
      return;
    }
    const keys = ownKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const child = value[keys[i]];
      if (child !== null && (typeof child === 'object' || typeof child === 'function') && !isFrozen(child)) {
        deepFreeze(child);
      }
    }
  }

  function isObject(value) {
    return value !== null && (typeof value === 'object' || typeof value === 'function');
  }

  // One descriptor object, refilled for every installed property: installing allocates no
  // descriptors. Null prototype and own fields, so defineProperty reads nothing inherited.
  const descriptor = create(null);
  descriptor.value = undefined;
  descriptor.writable = true;
  descriptor.enumerable = false;
  descriptor.configurable = true;

  function define(target, key, value, writable, enumerable, configurable) {
    descriptor.value = value;
    descriptor.writable = writable;
    descriptor.enumerable = enumerable;
    descriptor.configurable = configurable;
    defineProperty(target, key, descriptor);
    descriptor.value = undefined;
  }

  // The object at the path `segments[start..end]` below `base` (never assigns), creating plain
  // intermediate objects as needed. Members of `base` (globals) and intermediate objects are not
  // enumerable (like built-ins).
  function reach(base, segments, start, end) {
    let target = base;
    for (let i = start; i < end; i++) {
      // Own properties only: a segment named like an Object.prototype member (`toString`,
      // `valueOf`, `hasOwnProperty`) must never reach the shared prototype.
      let next = hasOwn(target, segments[i]) ? target[segments[i]] : undefined;
      if (!isObject(next)) {
        next = {};
        define(target, segments[i], next, true, false, true);
      }
      target = next;
    }
    return target;
  }

  // Defines `value` at `path` below `base`; members of installed objects are enumerable, members
  // of `base` are not.
  function place(base, path, value) {
    const last = path.length - 1;
    const target = reach(base, path, 0, last);
    define(target, path[last], value, true, target !== base, true);
  }

  function lookup(path) {
    let current = globalObject;
    for (let i = 0; i < path.length; i++) {
      if (!isObject(current) || !hasOwn(current, path[i])) return undefined;
      current = current[path[i]];
    }
    return current;
  }

  // Deep-freezes a root and makes its global binding read-only.
  function pin(name, value) {
    if (isObject(value)) deepFreeze(value);
    define(globalObject, name, value, false, false, false);
  }

  // Installs one part of the plan below `base`: `values` as `[path, textIndex]` pairs (the JSON
  // texts are fetched from the host), then the callables as one flat list of groups sharing a
  // parent path (fewer values to parse and paths to walk): `depth, ...parentSegments, count`,
  // then `count` pairs `name, code` with `code = index * 2 + (isBridge ? 1 : 0)`.
  function installPart(base, values, callables) {
    for (let i = 0; i < values.length; i++) place(base, values[i][0], parse(hostText(values[i][1])));
    for (let i = 0; i < callables.length;) {
      const start = i + 1;
      const end = start + callables[i];
      const parent = reach(base, callables, start, end);
      const enumerable = parent !== base;
      const count = callables[end];
      i = end + 1;
      descriptor.writable = true;
      descriptor.enumerable = enumerable;
      descriptor.configurable = true;
      for (let k = 0; k < count; k++, i += 2) {
        const code = callables[i + 1];
        descriptor.value = code & 1 ? makeBridge(code >>> 1) : makeLocal(code >>> 1);
        defineProperty(parent, callables[i], descriptor);
      }
      descriptor.value = undefined;
    }
  }

  // A frozen root built on its first read: its global is a read-only, non-configurable accessor
  // (so it can be neither deleted nor redefined, as an eager root's binding cannot) whose frozen
  // getter builds the root below a detached holder from its plan (`[values, callables]`, fetched
  // from the host), deep-freezes it and keeps it, so every read sees the same value. The read
  // may come from guest code at any point, which is safe: everything used is captured,
  // properties are defined (never assigned) on fresh objects, and a fresh JSON.parse result
  // holds own data properties only. If building throws (the guest's stack or memory ran out),
  // nothing is kept and the next read tries again.
  function pinLazy(name, planIndex) {
    let built = false;
    let value;
    const get = freeze(() => {
      if (!built) {
        const plan = parse(hostText(planIndex));
        const holder = create(null);
        installPart(holder, plan[0], plan[1]);
        const root = holder[name];
        if (isObject(root)) deepFreeze(root);
        value = root;
        built = true;
      }
      return value;
    });
    defineProperty(globalObject, name, {
      __proto__: null, get, set: undefined, enumerable: false, configurable: false,
    });
  }

  // Installs the guest setup in one pass, from the JSON plan made by install.rs `InstallPlan`:
  // `[values, callables, aliases, freeze, lazy]`; values and callables as in `installPart`,
  // aliases `[newPath, existingPath]` pairs, freeze a list of root names and lazy
  // `[root, planTextIndex]` pairs. Paths are non-empty lists of non-empty names.
  function install(planText, readings) {
    if (readings) installReadings();
    const plan = parse(planText);
    const aliases = plan[2];
    const roots = plan[3];
    const lazy = plan[4];
    installPart(globalObject, plan[0], plan[1]);
    for (let i = 0; i < aliases.length; i++) {
      const existing = lookup(aliases[i][1]);
      if (existing !== undefined) place(globalObject, aliases[i][0], existing);
    }
    for (let i = 0; i < roots.length; i++) {
      const value = hasOwn(globalObject, roots[i]) ? globalObject[roots[i]] : undefined;
      if (value !== undefined) pin(roots[i], value);
    }
    for (let i = 0; i < lazy.length; i++) pinLazy(lazy[i][0], lazy[i][1]);
    pin('text', text);
    pin('json', json);
    pin('yield_control', yield_control);
    for (let i = 0; i < runtimeGlobalNames.length; i++) pin(runtimeGlobalNames[i], runtimeGlobalStub);
    hostDefer(instantiate, globalObject, runtimeGlobalNames);
  }

  // Compiles the program as the body of an async function. Returns undefined, 'E' + failure text,
  // or for a syntax error 'S' + stack + NUL + failure text.
  function compile(body) {
    try {
      main = new AsyncFunction(body);
      return undefined;
    } catch (error) {
      if (!(error instanceof SyntaxErrorCtor)) return 'E' + describe(error);
      // The first stack line locates the error: `    at <input>:LINE:COLUMN` (see run.rs).
      // No guest code has run yet: a program that does not parse never executes.
      const stack = error.stack;
      const where = typeof stack === 'string' ? stack : '';
      return 'S' + where + '\u0000' + describe(error);
    }
  }

  function begin() {
    try {
      const promise = apply(main, undefined, []);
      apply(promiseThen, promise, [succeed, fail]);
    } catch (error) {
      fail(error);
    }
  }

  // Settles one bridge call or yield. Unknown ids are ignored (returns false).
  function settle(id, ok, payload) {
    const resolve = resolvers[id];
    const reject = rejecters[id];
    if (resolve === undefined) return false;
    delete resolvers[id];
    delete rejecters[id];
    if (ok) {
      let value;
      try {
        value = parse(payload);
      } catch (error) {
        reject(error);
        return true;
      }
      resolve(value);
    } else {
      reject(new ErrorCtor(payload));
    }
    return true;
  }

  // Nondeterministic readings, when the host records or replays the run (a tape, see tape.rs):
  // `install` loads bootstrap/readings.js for such a run only, before any guest code, and it
  // routes the guest's clock and randomness through `hostReading`.
  const hostReading = natives.hostReading;
  function installReadings() {
    hostMakeIntrinsics(DATE);
    hostPart(READINGS_PART)(partEnv());
  }

  // What the parts loaded later use of the captures above (each part takes what it needs): a
  // fresh null-prototype object for each part loaded, so no part sees another's changes. One
  // function for every part, so the core's closures capture each value once.
  function partEnv() {
    return {
      __proto__: null,
      apply, arrayBufferByteLength, arrayIncludes, bigintToString, bufferSlice, charCodeAt,
      cloneDate, codePointAt, construct, create, dataViewBuffer, dataViewByteLength,
      dataViewOffset, DataViewCtor, dateNow, define, defineProperty, emit, ErrorCtor, fail, freeze,
      fromCharCode, getPrototypeOf, globalObject, hostClearTimer, hostReading, hostTimer, isArray,
      isError, isView, MapCtor, mapForEach, mapGet, mapHas, mapSet, maxOutput, newDOMException,
      NumberCtor, ObjectCtor, objectKeys, OVER, parseFloatFn, parseIntFn, poll, pollSoon,
      RangeErrorCtor, safeEncodeDepth, setAdd, SetCtor, setForEach, StringCtor, stringify,
      stringIndexOf, stringSlice, typedArrayBuffer, typedArrayByteLength, typedArrayOffset,
      typedArraySlice, TypeErrorCtor, Uint8ArrayCtor, utf8Bytes, weakGet, WeakMapCtor, weakSet,
      wellFormed,
    };
  }

  // QuickJS frees the initial shape of a prototype (an object of it with no own property yet)
  // when the last object holding that shape dies, and makes it again for the next one: a program
  // that makes many objects or functions one at a time would make a shape for each. These two
  // live as long as the VM and keep the shapes of plain objects and of functions.
  const shapeKeepers = [{}, create(FunctionProto)];

  return freeze({ __proto__: null, install, compile, begin, settle, fireTimer, shapeKeepers });
})
