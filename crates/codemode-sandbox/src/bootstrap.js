// Trusted bootstrap of one code mode run (see run.rs and bytecode.rs). A module compiled once
// per process to bytecode and loaded into each fresh VM before any guest code; its default
// export receives the host's native functions and returns the control object only Rust can
// reach. Every built-in the bridge relies on is captured here, so later guest tampering with
// JSON, Promise, Object.prototype or the installed globals cannot change what the bridge does.
// Nothing defined here is reachable from guest code except the functions installed as globals,
// which are frozen.
export default function (natives, maxScan) {
  const { hostCall, hostLocal, hostEmit, hostYield, hostFinish, hostIsProxy, hostPoll } = natives;
  const { hostTimer, hostClearTimer, hostOutputRemaining } = natives;
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

  // ---- Runtime globals models expect: console, TextEncoder/TextDecoder, structuredClone. ----
  // Conveniences in the guest's own realm: they never touch the bridge except through emit(),
  // which counts every console line against the output budget like text().

  const NumberCtor = Number;
  const ObjectCtor = Object;
  const DateProto = Date.prototype;
  const dateGetTime = DateProto.getTime;
  const DateCtor = Date;
  const MapCtor = Map;
  const SetCtor = Set;
  const mapForEach = Map.prototype.forEach;
  const mapSet = Map.prototype.set;
  const mapGet = Map.prototype.get;
  const mapHas = Map.prototype.has;
  const setForEach = Set.prototype.forEach;
  const setAdd = Set.prototype.add;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const isView = ArrayBuffer.isView;
  const bufferSlice = ArrayBuffer.prototype.slice;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedArrayBuffer = getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
  const typedArrayOffset = getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
  const typedArrayByteLength = getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
  const typedArraySlice = typedArrayProto.slice;
  const dataViewBuffer = getOwnPropertyDescriptor(DataView.prototype, 'buffer').get;
  const dataViewOffset = getOwnPropertyDescriptor(DataView.prototype, 'byteOffset').get;
  const dataViewByteLength = getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get;
  const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const fromCharCode = String.fromCharCode;
  const codePointAt = String.prototype.codePointAt;
  const stringSlice = String.prototype.slice;
  const charCodeAt = String.prototype.charCodeAt;
  const stringIndexOf = String.prototype.indexOf;
  const parseIntFn = parseInt;
  const parseFloatFn = parseFloat;
  const DOMExceptionCtor = typeof DOMException === 'function' ? DOMException : undefined;
  const INSPECT_DEPTH = 8;

  // One console argument as Node prints it, compactly: strings as they are, objects as compact
  // JSON through the safe adapter (depth-bounded), OVER when it alone exceeds the budget.
  function inspect(value) {
    switch (typeof value) {
      case 'string': return value;
      case 'undefined': return 'undefined';
      case 'function': return '[Function: ' + (typeof value.name === 'string' && value.name !== '' ? value.name : 'anonymous') + ']';
      case 'symbol': return StringCtor(value);
      case 'bigint': return apply(bigintToString, value, []) + 'n';
      case 'number': case 'boolean': return StringCtor(value);
      default: break;
    }
    if (value === null) return 'null';
    const text = safeEncodeDepth(value, maxOutput, INSPECT_DEPTH);
    return text;
  }

  // util.format for the common cases: %s %d %i %f %j %o %O %c %%, the rest appended with spaces.
  function format(args) {
    let out = '';
    let next = 0;
    const first = args[0];
    if (typeof first === 'string') {
      if (first.length > maxOutput) return OVER;
      next = 1;
      let last = 0;
      for (let i = apply(stringIndexOf, first, ['%']); i >= 0 && i < first.length - 1; i = apply(stringIndexOf, first, ['%', i + 1])) {
        const spec = first[i + 1];
        let piece;
        if (spec === '%') {
          piece = '%';
        } else if (next < args.length && (spec === 's' || spec === 'd' || spec === 'i' || spec === 'f' || spec === 'j' || spec === 'o' || spec === 'O' || spec === 'c')) {
          const arg = args[next++];
          switch (spec) {
            case 's': piece = typeof arg === 'string' ? arg : inspect(arg); break;
            case 'd': piece = typeof arg === 'bigint' ? apply(bigintToString, arg, []) + 'n' : typeof arg === 'object' && arg !== null ? 'NaN' : StringCtor(NumberCtor(arg)); break;
            case 'i': piece = typeof arg === 'bigint' ? apply(bigintToString, arg, []) + 'n' : StringCtor(parseIntFn(arg)); break;
            case 'f': piece = typeof arg === 'symbol' ? 'NaN' : StringCtor(parseFloatFn(arg)); break;
            case 'j': piece = inspect(arg === undefined ? null : arg); if (arg === undefined) piece = 'undefined'; break;
            case 'c': piece = ''; break;
            default: piece = inspect(arg);
          }
        } else {
          continue;
        }
        if (piece === OVER) return OVER;
        out += apply(stringSlice, first, [last, i]) + piece;
        if (out.length > maxOutput) return OVER;
        last = i + 2;
        i++;
      }
      out += apply(stringSlice, first, [last]);
    }
    for (; next < args.length; next++) {
      const arg = args[next];
      if (typeof arg === 'string' && arg.length > maxOutput) return OVER;
      const piece = inspect(arg);
      if (piece === OVER) return OVER;
      out += (out === '' && next === 0 ? '' : ' ') + piece;
      if (out.length > maxOutput) return OVER;
    }
    return out;
  }

  function makeConsoleMethod(prefix) {
    return freeze(function (...args) {
      poll();
      const text = format(args);
      if (text === OVER) return emit(false, OVER);
      emit(false, wellFormed(prefix + text));
    });
  }

  const consoleObject = create(ObjectCtor.prototype);
  consoleObject.log = makeConsoleMethod('');
  consoleObject.info = makeConsoleMethod('info: ');
  consoleObject.warn = makeConsoleMethod('warn: ');
  consoleObject.error = makeConsoleMethod('error: ');
  consoleObject.debug = makeConsoleMethod('debug: ');

  // UTF-8 bytes of a string (lone surrogates become U+FFFD first).
  function utf8Encode(text) {
    const input = wellFormed(StringCtor(text));
    const bytes = [];
    for (let i = 0; i < input.length; i++) {
      const point = apply(codePointAt, input, [i]);
      if (point < 0x80) {
        bytes.push(point);
      } else if (point < 0x800) {
        bytes.push(0xc0 | (point >> 6), 0x80 | (point & 0x3f));
      } else if (point < 0x10000) {
        bytes.push(0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f));
      } else {
        bytes.push(0xf0 | (point >> 18), 0x80 | ((point >> 12) & 0x3f), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f));
        i++;
      }
    }
    return new Uint8ArrayCtor(bytes);
  }

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') { return utf8Encode(input); }
    encodeInto(input, destination) {
      const text = wellFormed(StringCtor(input));
      let read = 0;
      let written = 0;
      const capacity = destination.length;
      for (let i = 0; i < text.length; i++) {
        const point = apply(codePointAt, text, [i]);
        const units = point >= 0x10000 ? 2 : 1;
        const encoded = utf8Encode(apply(stringSlice, text, [i, i + units]));
        if (written + encoded.length > capacity) break;
        for (let k = 0; k < encoded.length; k++) destination[written + k] = encoded[k];
        written += encoded.length;
        read += units;
        i += units - 1;
      }
      return { read, written };
    }
  }

  // The bytes of a BufferSource as a Uint8Array view, without copying.
  function bytesOf(input) {
    if (input === undefined) return new Uint8ArrayCtor(0);
    if (isView(input)) {
      try {
        return new Uint8ArrayCtor(apply(typedArrayBuffer, input, []), apply(typedArrayOffset, input, []), apply(typedArrayByteLength, input, []));
      } catch (_) {
        return new Uint8ArrayCtor(apply(dataViewBuffer, input, []), apply(dataViewOffset, input, []), apply(dataViewByteLength, input, []));
      }
    }
    try {
      apply(arrayBufferByteLength, input, []);
      return new Uint8ArrayCtor(input);
    } catch (_) {
      throw new TypeErrorCtor('TextDecoder.decode takes an ArrayBuffer or a view of one');
    }
  }

  const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8'];

  // A decoder's options, by instance (getters read on the prototype itself answer false).
  const decoderOptions = new WeakMap();
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  function optionsOf(decoder) {
    return apply(weakGet, decoderOptions, [decoder]) || { fatal: false, ignoreBOM: false };
  }

  class TextDecoder {
    constructor(label = 'utf-8', options = {}) {
      const name = StringCtor(label).trim().toLowerCase();
      if (!apply(arrayIncludes, UTF8_LABELS, [name])) throw new RangeErrorCtor('TextDecoder supports utf-8 only in code mode, not ' + name);
      apply(weakSet, decoderOptions, [this, { fatal: !!(options && options.fatal), ignoreBOM: !!(options && options.ignoreBOM) }]);
    }
    get encoding() { return 'utf-8'; }
    get fatal() { return optionsOf(this).fatal; }
    get ignoreBOM() { return optionsOf(this).ignoreBOM; }
    decode(input, _options) {
      const bytes = bytesOf(input);
      const fatal = optionsOf(this).fatal;
      let out = '';
      let units = [];
      let i = 0;
      if (!optionsOf(this).ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
      const flush = () => { out += apply(fromCharCode, undefined, units); units = []; };
      const bad = () => {
        if (fatal) throw new TypeErrorCtor('The encoded data was not valid utf-8');
        units.push(0xfffd);
      };
      while (i < bytes.length) {
        const b = bytes[i];
        let need = 0;
        let point = 0;
        let lower = 0x80;
        let upper = 0xbf;
        if (b < 0x80) { units.push(b); i++; if (units.length >= 4096) flush(); continue; }
        if (b >= 0xc2 && b <= 0xdf) { need = 1; point = b & 0x1f; }
        else if (b >= 0xe0 && b <= 0xef) { need = 2; point = b & 0x0f; if (b === 0xe0) lower = 0xa0; if (b === 0xed) upper = 0x9f; }
        else if (b >= 0xf0 && b <= 0xf4) { need = 3; point = b & 0x07; if (b === 0xf0) lower = 0x90; if (b === 0xf4) upper = 0x8f; }
        else { bad(); i++; continue; }
        let k = 1;
        for (; k <= need; k++) {
          const c = bytes[i + k];
          if (c === undefined || c < lower || c > upper) break;
          lower = 0x80;
          upper = 0xbf;
          point = (point << 6) | (c & 0x3f);
        }
        if (k <= need) { bad(); i += k; continue; }
        i += need + 1;
        if (point >= 0x10000) {
          point -= 0x10000;
          units.push(0xd800 + (point >> 10), 0xdc00 + (point & 0x3ff));
        } else {
          units.push(point);
        }
        if (units.length >= 4096) flush();
      }
      flush();
      return out;
    }
  }

  function dataCloneError(what) {
    const message = what + ' could not be cloned.';
    return DOMExceptionCtor !== undefined ? new DOMExceptionCtor(message, 'DataCloneError') : new TypeErrorCtor(message);
  }

  // structuredClone for JSON-compatible values plus Date, Map, Set, ArrayBuffer, typed arrays,
  // DataView, Error and boxed primitives; cycles and shared references are preserved.
  function structuredClone(value) {
    const seen = new MapCtor();
    function clone(input) {
      switch (typeof input) {
        case 'function': throw dataCloneError('A function');
        case 'symbol': throw dataCloneError('A symbol');
        case 'object': break;
        default: return input;
      }
      if (input === null) return null;
      if (apply(mapHas, seen, [input])) return apply(mapGet, seen, [input]);
      let out;
      if (isArray(input)) {
        out = [];
        apply(mapSet, seen, [input, out]);
        const keys = objectKeys(input);
        for (let i = 0; i < keys.length; i++) out[keys[i]] = clone(input[keys[i]]);
        out.length = input.length;
        return out;
      }
      if (isView(input)) {
        try {
          out = apply(typedArraySlice, input, []);
        } catch (_) {
          out = new DataView(apply(bufferSlice, apply(dataViewBuffer, input, []), [apply(dataViewOffset, input, []), apply(dataViewOffset, input, []) + apply(dataViewByteLength, input, [])]));
        }
        apply(mapSet, seen, [input, out]);
        return out;
      }
      try {
        apply(arrayBufferByteLength, input, []);
        out = apply(bufferSlice, input, [0]);
        apply(mapSet, seen, [input, out]);
        return out;
      } catch (_) {
        // not an ArrayBuffer
      }
      let proto = getPrototypeOf(input);
      if (proto === DateProto) {
        out = new DateCtor(apply(dateGetTime, input, []));
      } else if (input instanceof MapCtor) {
        out = new MapCtor();
        apply(mapSet, seen, [input, out]);
        apply(mapForEach, input, [(v, k) => apply(mapSet, out, [clone(k), clone(v)])]);
        return out;
      } else if (input instanceof SetCtor) {
        out = new SetCtor();
        apply(mapSet, seen, [input, out]);
        apply(setForEach, input, [(v) => apply(setAdd, out, [clone(v)])]);
        return out;
      } else if (isError(input)) {
        out = new ErrorCtor(typeof input.message === 'string' ? input.message : '');
        if (typeof input.name === 'string') out.name = input.name;
      } else if (input instanceof NumberCtor || input instanceof StringCtor || input instanceof Boolean) {
        out = ObjectCtor(input.valueOf());
      } else if (proto === ObjectCtor.prototype || proto === null) {
        out = {};
        apply(mapSet, seen, [input, out]);
        const keys = objectKeys(input);
        for (let i = 0; i < keys.length; i++) define(out, keys[i], clone(input[keys[i]]), true, true, true);
        return out;
      } else {
        throw dataCloneError('An object of this kind');
      }
      apply(mapSet, seen, [input, out]);
      return out;
    }
    return clone(value);
  }

  // Timers are host-backed: the host keeps each timer's due time and counts it as pending work
  // (a run with a timer pending does not complete, and parks at its deadline like a pending
  // call); the callbacks stay here and run only inside the run's own exec/wait legs, after the
  // microtasks, in due-time order.
  const timerCallbacks = create(null);
  const MAX_TIMER_DELAY = 2147483647;

  function addTimer(callback, delay, args, repeat) {
    poll();
    if (typeof callback !== 'function') throw new TypeErrorCtor('the timer callback must be a function');
    let ms = NumberCtor(delay);
    if (!(ms > 0)) ms = 0;
    if (ms > MAX_TIMER_DELAY) ms = MAX_TIMER_DELAY;
    const id = hostTimer(ms, repeat);
    if (typeof id === 'string') throw new RangeErrorCtor(id);
    timerCallbacks[id] = { callback, args, repeat };
    return id;
  }

  function setTimeout(callback, delay, ...args) {
    return addTimer(callback, delay, args, false);
  }

  function setInterval(callback, delay, ...args) {
    return addTimer(callback, delay, args, true);
  }

  function clearTimer(id) {
    const key = NumberCtor(id);
    if (!(key > 0) || timerCallbacks[key] === undefined) return;
    delete timerCallbacks[key];
    hostClearTimer(key);
  }

  function clearTimeout(id) {
    clearTimer(id);
  }

  function clearInterval(id) {
    clearTimer(id);
  }

  // Runs one due timer (from the host); an uncaught error in its callback fails the run.
  function fireTimer(id) {
    const timer = timerCallbacks[id];
    if (timer === undefined) return false;
    if (!timer.repeat) delete timerCallbacks[id];
    try {
      apply(timer.callback, undefined, timer.args);
    } catch (error) {
      fail(error);
    }
    return true;
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

  // UTF-8 bytes of a well-formed string (what the host counts).
  function utf8Bytes(text) {
    let bytes = text.length;
    for (let i = 0; i < text.length; i++) {
      const unit = apply(charCodeAt, text, [i]);
      if (unit >= 0x80) bytes += unit >= 0x800 && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1;
    }
    return bytes;
  }

  // Bytes a marker takes; leaves room for the markers a cut adds.
  const CUT_SLACK = 48;

  // The largest prefix of a safe value (plain data made by safeValue) whose JSON fits in
  // `budget` bytes: arrays keep their first items and end with a "[… N more items]" string,
  // objects keep their first keys and gain a "…" key counting the rest, long strings are cut on
  // a character boundary with a "…[N more characters]" marker.
  function cut(value, budget) {
    if (typeof value === 'string') {
      if (utf8Bytes(value) + 2 <= budget) return value;
      let keep = (budget - CUT_SLACK) / 3 | 0;
      if (keep < 0) keep = 0;
      const last = apply(charCodeAt, value, [keep - 1]);
      if (keep > 0 && last >= 0xd800 && last <= 0xdbff) keep--;
      return apply(stringSlice, value, [0, keep]) + '…[' + (value.length - keep) + ' more characters]';
    }
    if (value === null || typeof value !== 'object') return value;
    const arrayLike = isArray(value);
    const keys = arrayLike ? undefined : objectKeys(value);
    const count = arrayLike ? value.length : keys.length;
    const out = arrayLike ? [] : create(null);
    let used = 2;
    for (let i = 0; i < count; i++) {
      const key = arrayLike ? i : keys[i];
      const item = value[key];
      const size = utf8Bytes(stringify(item)) + 1 + (arrayLike ? 0 : utf8Bytes(stringify(key)) + 1);
      if (used + size + CUT_SLACK <= budget) {
        define(out, key, item, true, true, true);
        used += size;
        continue;
      }
      let dropped = count - i;
      const room = budget - used - CUT_SLACK * 2;
      if (room > CUT_SLACK) {
        define(out, key, cut(item, room), true, true, true);
        dropped--;
      }
      if (dropped > 0) {
        if (arrayLike) define(out, out.length, '[… ' + dropped + ' more items]', true, true, true);
        else define(out, '…', dropped + ' more keys', true, true, true);
      }
      break;
    }
    return out;
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
      kept = stringify(cut(safe, remaining));
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
    pin('console', consoleObject);
    pin('TextEncoder', TextEncoder);
    pin('TextDecoder', TextDecoder);
    pin('structuredClone', structuredClone);
    pin('setTimeout', setTimeout);
    pin('setInterval', setInterval);
    pin('clearTimeout', clearTimeout);
    pin('clearInterval', clearInterval);
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

  return freeze({ __proto__: null, install, compile, begin, settle, fireTimer });
}
