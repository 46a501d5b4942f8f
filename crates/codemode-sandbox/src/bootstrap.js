// Trusted bootstrap of one code mode run (see run.rs and bytecode.rs). A module compiled once
// per process to bytecode and loaded into each fresh VM before any guest code; its default
// export receives the host's native functions and returns the control object only Rust can
// reach. Every built-in the bridge relies on is captured here, so later guest tampering with
// JSON, Promise, Object.prototype or the installed globals cannot change what the bridge does.
// Nothing defined here is reachable from guest code except the functions installed as globals,
// which are frozen.
export default function (natives, maxScan) {
  const { hostCall, hostLocal, hostEmit, hostYield, hostFinish, hostIsProxy, hostPoll } = natives;
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
      default: return value;
    }
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
      const id = hostCall(index, encodeArgs(args));
      if (typeof id === 'string') throw new ErrorCtor(id);
      resolvers[id] = resolve;
      rejecters[id] = reject;
    }));
  }

  function makeLocal(index) {
    return freeze((...args) => new PromiseCtor((resolve) => {
      // `[value]` on success, the refusal message as a JSON string otherwise.
      const answer = parse(hostLocal(index, encodeArgs(args)));
      if (typeof answer === 'string') throw new ErrorCtor(answer);
      resolve(answer[0]);
    }));
  }

  function text(value) {
    const payload = typeof value === 'string' ? value : value === undefined ? 'undefined' : encode(value);
    const refusal = hostEmit(false, payload);
    if (refusal !== undefined) throw new ErrorCtor(refusal);
  }

  function json(value) {
    const refusal = hostEmit(true, encode(value));
    if (refusal !== undefined) throw new ErrorCtor(refusal);
  }

  function yield_control(reason) {
    return new PromiseCtor((resolve) => {
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

  function succeed(value) {
    if (finished) return;
    let text;
    try {
      text = encode(value);
    } catch (error) {
      fail(error);
      return;
    }
    finished = true;
    hostFinish(true, text, false);
  }

  function fail(error) {
    if (finished) return;
    finished = true;
    const message = describe(error);
    hostFinish(false, message, error === null || message === 'InternalError: out of memory');
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
      let next = target[segments[i]];
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
      if (!isObject(current)) return undefined;
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
      const value = globalObject[roots[i]];
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
