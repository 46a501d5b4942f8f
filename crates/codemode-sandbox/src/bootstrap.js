// Trusted bootstrap of one code mode run (see run.rs). Evaluated once, before any guest code,
// to a function that receives the host's native functions and returns the control object only
// Rust can reach. Every built-in the bridge relies on is captured here, so later guest tampering
// with JSON, Promise, Object.prototype or the installed globals cannot change what the bridge
// does. Nothing defined here is reachable from guest code except the functions installed as
// globals, which are frozen.
(function (hostCall, hostLocal, hostEmit, hostYield, hostFinish, hostIsProxy, maxScan) {
  'use strict';
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
    return (...args) => new PromiseCtor((resolve, reject) => {
      const id = hostCall(index, encodeArgs(args));
      if (typeof id === 'string') throw new ErrorCtor(id);
      resolvers[id] = resolve;
      rejecters[id] = reject;
    });
  }

  function makeLocal(index) {
    return (...args) => new PromiseCtor((resolve) => {
      // `[value]` on success, the refusal message as a JSON string otherwise.
      const answer = parse(hostLocal(index, encodeArgs(args)));
      if (typeof answer === 'string') throw new ErrorCtor(answer);
      resolve(answer[0]);
    });
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
      const id = hostYield(typeof reason === 'string' ? reason : '');
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

  function deepFreeze(value) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function') || isFrozen(value)) return;
    freeze(value);
    const keys = ownKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const descriptor = getOwnPropertyDescriptor(value, keys[i]);
      if (descriptor !== undefined && hasOwn(descriptor, 'value')) deepFreeze(descriptor.value);
    }
  }

  // Deep-freezes a root and makes its global binding read-only (used by the Rust installer).
  function pin(name, value) {
    deepFreeze(value);
    defineProperty(globalObject, name, { value, writable: false, enumerable: false, configurable: false });
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

  return freeze({
    __proto__: null, makeBridge, makeLocal, pin, text, json, yield_control, compile, begin, settle,
  });
})
