// The runtime globals models expect of a JavaScript runtime, for the code mode bootstrap
// (bootstrap.js): console, TextEncoder, TextDecoder, structuredClone and the host-backed timers
// (setTimeout, setInterval, clearTimeout, clearInterval). Conveniences in the guest's own realm:
// they never touch the bridge except through emit(), which counts every console line against the
// output budget like text(), and the timer natives. Loaded into a VM on the first access to one
// of these globals (deferred, see `instantiate` in bootstrap.js and deferred.rs), so a VM whose program uses none never loads this code. Compiled once per process
// to bytecode, like the bootstrap.
//
// Its one function receives what it uses of the bootstrap's captures (`env`, a null-prototype
// object) and returns the globals, and `fireTimer` for the host. It runs after guest code may have
// run: at load it uses
// `env` only, never a global or a property of a built-in, and it assigns no property an object
// could inherit a setter for.
(function (env) {
  'use strict';
  const {
    ErrorCtor, MapCtor, NumberCtor, OVER, ObjectCtor, RangeErrorCtor, SetCtor, StringCtor,
    TypeErrorCtor, Uint8ArrayCtor, WeakMapCtor, apply, arrayBufferByteLength, arrayIncludes,
    bigintToString, bufferSlice, cloneDate, codePointAt, create, DataViewCtor, dataViewBuffer,
    dataViewByteLength, dataViewOffset, define, emit, fail, freeze, fromCharCode, getPrototypeOf,
    hostClearTimer, hostTimer, isArray, isError, isView, mapForEach, mapGet, mapHas, mapSet,
    maxOutput, newDOMException, objectKeys, parseFloatFn, parseIntFn, poll, pollSoon,
    safeEncodeDepth, setAdd, setForEach, stringIndexOf, stringSlice, typedArrayBuffer,
    typedArrayByteLength, typedArrayOffset, typedArraySlice, weakGet, weakSet, wellFormed,
  } = env;

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

  // An object literal defines its members (a guest setter on Object.prototype sees nothing).
  const consoleObject = {
    log: makeConsoleMethod(''),
    info: makeConsoleMethod('info: '),
    warn: makeConsoleMethod('warn: '),
    error: makeConsoleMethod('error: '),
    debug: makeConsoleMethod('debug: '),
  };

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
  const decoderOptions = new WeakMapCtor();
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
    return newDOMException(message, 'DataCloneError');
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
          pollSoon();
          out = apply(typedArraySlice, input, []);
        } catch (_) {
          out = new DataViewCtor(apply(bufferSlice, apply(dataViewBuffer, input, []), [apply(dataViewOffset, input, []), apply(dataViewOffset, input, []) + apply(dataViewByteLength, input, [])]));
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
      const date = cloneDate(input, proto);
      if (date !== undefined) {
        out = date;
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

  // Runs one due timer (from the host, through the bootstrap's control object); an uncaught
  // error in its callback fails the run. False for an unknown timer.
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

  return {
    __proto__: null, console: consoleObject, TextEncoder, TextDecoder, structuredClone, setTimeout,
    setInterval, clearTimeout, clearInterval, fireTimer,
  };
})
