// Trusted bootstrap of one code mode run (see run.rs and bytecode.rs). A module compiled once
// per process to bytecode and loaded into each fresh VM before any guest code; its default
// export receives the host's native functions and returns the control object only Rust can
// reach. Every built-in the bridge relies on is captured here, so later guest tampering with
// JSON, Promise, Object.prototype or the installed globals cannot change what the bridge does.
// Nothing defined here is reachable from guest code except the functions installed as globals,
// which are frozen.
export default function (natives, maxScan) {
  const { hostCall, hostLocal, hostEmit, hostYield, hostFinish, hostIsProxy, hostPoll } = natives;
  const maxCallArgs = natives.maxCallArgs;
  const maxOutput = natives.maxOutput;
  const globalObject = globalThis;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const SyntaxErrorCtor = SyntaxError;
  const RangeErrorCtor = RangeError;
  const ArrayProto = Array.prototype;
  const typedArrayLength = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'length').get;
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
  const TIMEOUT = 'code mode timeout exceeded';
  const OUTPUT_LIMIT = 'code mode output limit exceeded';

  // V8-style stack hooks hand the functions on the stack to guest code (CallSite#getFunction),
  // which would expose the internals below. Pin them off before any guest code runs.
  defineProperty(ErrorCtor, 'prepareStackTrace', {
    value: undefined, writable: false, enumerable: false, configurable: false,
  });

  // Array builtins whose C loops never poll the interrupt handler would scan a sparse array or an
  // array-like of length up to 2^53 for hours, beyond any deadline. Before such a builtin runs,
  // the length it will read is checked: a data property (or the intrinsic typed-array getter)
  // holding a primitive no larger than `maxScan`. Proxies and accessor lengths are refused, since
  // they could answer differently when the builtin reads the length again.
  function checkScan(value) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return;
    for (let holder = value; holder !== null; holder = getPrototypeOf(holder)) {
      if (hostIsProxy(holder)) throw new TypeErrorCtor('array methods cannot run on a Proxy in code mode');
      const descriptor = getOwnPropertyDescriptor(holder, 'length');
      if (descriptor === undefined) continue;
      let length;
      if (hasOwn(descriptor, 'value')) {
        length = descriptor.value;
      } else if (descriptor.get === typedArrayLength) {
        return;
      } else {
        throw new TypeErrorCtor('array methods need a plain length in code mode');
      }
      if (length !== null && (typeof length === 'object' || typeof length === 'function')) {
        throw new TypeErrorCtor('array methods need a primitive length in code mode');
      }
      if (+length > maxScan) throw new RangeErrorCtor('array-like too long to scan in code mode: ' + length);
      return;
    }
  }

  function guardScan(name, checkArgs) {
    const original = ArrayProto[name];
    if (typeof original !== 'function') return;
    const guarded = {
      [name](...args) {
        checkScan(this);
        if (checkArgs) for (let i = 0; i < args.length; i++) checkScan(args[i]);
        return apply(original, this, args);
      },
    }[name];
    defineProperty(ArrayProto, name, { value: guarded, writable: true, enumerable: false, configurable: true });
  }

  const unpolledScans = ['join', 'toLocaleString', 'reverse', 'toReversed', 'slice', 'splice', 'toSpliced',
    'copyWithin', 'flat', 'flatMap', 'sort', 'toSorted', 'shift', 'unshift', 'fill', 'with', 'pop', 'push', 'at'];
  for (let i = 0; i < unpolledScans.length; i++) guardScan(unpolledScans[i], false);
  guardScan('concat', true);

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
        if (value.length > maxCallArgs) throw new RangeErrorCtor('code mode call arguments exceed ' + maxCallArgs + ' bytes');
        return wellFormed(value);
      default: return value;
    }
  }

  // Lone surrogates become U+FFFD: every string that reaches the host is valid Unicode.
  function wellFormed(text) {
    return apply(toWellFormed, text, []);
  }

  // Stops a guest that loops over refused or cheap calls after its deadline: natives are not
  // reached by the interrupt handler, so every bridge entry point polls first.
  function poll() {
    if (hostPoll()) throw new RangeErrorCtor(TIMEOUT);
  }

  // JSON text of the guest's arguments, refused by size before the host copies it.
  function encodeCall(args) {
    const text = encodeArgs(args);
    if (text.length > maxCallArgs) throw new RangeErrorCtor('code mode call arguments exceed ' + maxCallArgs + ' bytes');
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
      if (depth >= SAFE_DEPTH) { charge(12); return '[Too deep]'; }
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
    safeBudget = limit;
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

  function makeBridge(index) {
    return freeze((...args) => new PromiseCtor((resolve, reject) => {
      poll();
      const id = hostCall(index, encodeCall(args));
      if (typeof id === 'string') throw new ErrorCtor(id);
      resolvers[id] = resolve;
      rejecters[id] = reject;
    }));
  }

  function makeLocal(index) {
    return freeze((...args) => new PromiseCtor((resolve) => {
      // `[value]` on success, the refusal message as a JSON string otherwise.
      poll();
      const answer = parse(hostLocal(index, encodeCall(args)));
      if (typeof answer === 'string') throw new ErrorCtor(answer);
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

  function text(value) {
    poll();
    if (typeof value === 'string') return emit(false, value.length > maxOutput ? OVER : wellFormed(value));
    if (value === undefined) return emit(false, 'undefined');
    emit(false, safeEncode(value, maxOutput));
  }

  function json(value) {
    poll();
    emit(true, safeEncode(value, maxOutput));
  }

  function yield_control() {
    return new PromiseCtor((resolve) => {
      poll();
      const id = hostYield();
      resolvers[id] = resolve;
      rejecters[id] = resolve;
    });
  }

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

  // The program's value goes through the safe adapter: a finished program never fails on it.
  // The last argument of hostFinish says, for a value, that it is over the output budget and,
  // for a failure, that memory ran out.
  function succeed(value) {
    if (finished) return;
    let text;
    try {
      text = safeEncode(value, maxOutput);
    } catch (error) {
      fail(error);
      return;
    }
    finished = true;
    if (text === OVER || text.length > maxOutput) hostFinish(true, '', true);
    else hostFinish(true, text, false);
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
    hostFinish(false, message, outOfMemory(error));
  }

  // Installation runs once, before any guest code, over values only the installer made: JSON.parse
  // results, plain path objects and bootstrap closures. They hold own data properties only, so
  // reading them runs no code and needs no property descriptors. A frozen object is skipped: it
  // is either already walked or a bridge closure, whose own properties are primitives.
  function deepFreeze(value) {
    if (isFrozen(value)) return;
    freeze(value);
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

  // The object at the path `segments[start..end]` (never assigns), creating plain intermediate
  // objects as needed. Globals and intermediate objects are not enumerable (like built-ins).
  function reach(segments, start, end) {
    let target = globalObject;
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

  // Defines `value` at `path`; members of installed objects are enumerable, globals are not.
  function place(path, value) {
    const last = path.length - 1;
    const target = reach(path, 0, last);
    define(target, path[last], value, true, target !== globalObject, true);
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

  // Makes a frozen root that is built on first read: a read-only accessor whose getter parses
  // `jsonText`, deep-freezes the result and keeps it, so every read sees the same value. The
  // getter may run after guest code, which is safe: `parse` is captured, and a fresh JSON.parse
  // result holds own data properties only, so freezing it reads no prototype and runs no code.
  function pinLazy(name, jsonText) {
    let pending = jsonText;
    let value;
    const get = freeze(() => {
      if (pending !== undefined) {
        const parsed = parse(pending);
        if (isObject(parsed)) deepFreeze(parsed);
        value = parsed;
        pending = undefined;
      }
      return value;
    });
    defineProperty(globalObject, name, {
      __proto__: null, get, set: undefined, enumerable: false, configurable: false,
    });
  }

  // Installs the guest setup in one pass, from the JSON plan made by run.rs `InstallPlan`:
  // `[values, callables, aliases, freeze, lazy]` with values `[path, textIndex]` pairs, aliases
  // `[newPath, existingPath]` pairs, freeze a list of root names and lazy `[root, textIndex]`
  // pairs; `texts` holds the JSON texts of the values. Callables are one flat list of groups
  // sharing a parent path (fewer values to parse and paths to walk): `depth, ...parentSegments,
  // count`, then `count` pairs `name, code` with `code = index * 2 + (isBridge ? 1 : 0)`. Paths
  // are non-empty lists of non-empty names.
  function install(planText, texts) {
    const plan = parse(planText);
    const values = plan[0];
    const callables = plan[1];
    const aliases = plan[2];
    const roots = plan[3];
    const lazy = plan[4];
    for (let i = 0; i < values.length; i++) place(values[i][0], parse(texts[values[i][1]]));
    for (let i = 0; i < callables.length;) {
      const start = i + 1;
      const end = start + callables[i];
      const parent = reach(callables, start, end);
      const enumerable = parent !== globalObject;
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
    for (let i = 0; i < aliases.length; i++) {
      const existing = lookup(aliases[i][1]);
      if (existing !== undefined) place(aliases[i][0], existing);
    }
    for (let i = 0; i < roots.length; i++) {
      const value = hasOwn(globalObject, roots[i]) ? globalObject[roots[i]] : undefined;
      if (value !== undefined) pin(roots[i], value);
    }
    for (let i = 0; i < lazy.length; i++) pinLazy(lazy[i][0], texts[lazy[i][1]]);
    pin('text', text);
    pin('json', json);
    pin('yield_control', yield_control);
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

  return freeze({ __proto__: null, install, compile, begin, settle });
}
