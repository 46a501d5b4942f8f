// Trusted bootstrap of one code mode run (see run.rs and bytecode.rs). A module compiled once
// per process to bytecode and loaded into each fresh VM before any guest code; its default
// export receives the host's native functions and returns the control object only Rust can
// reach. Every built-in the bridge relies on is captured here, so later guest tampering with
// JSON, Promise, Object.prototype or the installed globals cannot change what the bridge does.
// Nothing defined here is reachable from guest code except the functions installed as globals,
// which are frozen.
export default function (natives, maxScan) {
  const { hostCall, hostLocal, hostText, hostEmit, hostYield, hostFinish, hostIsProxy, hostPoll } = natives;
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

  // V8-style stack hooks hand the functions on the stack to guest code (CallSite#getFunction),
  // which would expose the internals below. Pin them off before any guest code runs.
  defineProperty(ErrorCtor, 'prepareStackTrace', {
    value: undefined, writable: false, enumerable: false, configurable: false,
  });

  // Deadline guards. The interrupt handler runs between bytecode instructions (every ~10,000
  // calls and back-edges), never inside a native built-in, so a native whose single call is
  // expensive overruns the deadline by its own cost, and a loop of such calls by many times that.
  // Each expensive built-in is therefore bounded here, before any guest code runs (the table in
  // docs/builtins-audit.md says how and what one call can still cost): an operand cap with a
  // catchable RangeError, an interruptible JS replacement, and a poll point (`poll`) before any
  // native call that may do more than `POLL_WORK` units of work, so a loop of calls ends within
  // one call's cost. Every original is captured now; guest tampering later changes nothing here.
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const StringProto = String.prototype;
  const construct = Reflect.construct;
  const setPrototypeOf = Object.setPrototypeOf;
  const Int32ArrayCtor = Int32Array;
  const stringSlice = StringProto.slice;
  const stringIndexOf = StringProto.indexOf;
  const stringLastIndexOf = StringProto.lastIndexOf;
  const regExpGlobal = getOwnPropertyDescriptor(RegExp.prototype, 'global').get;
  const RegExpProto = RegExp.prototype;
  const symbolMatch = Symbol.match;
  const symbolReplace = Symbol.replace;
  const symbolSplit = Symbol.split;
  const symbolSpecies = Symbol.species;
  const symbolIterator = Symbol.iterator;
  const dateNow = Date.now;
  const ObjectCtor = Object;
  // Work units (compared characters, visited elements) a native call may do without polling.
  const POLL_WORK = 16384;
  // Longest array-like an unpolled linear Array builtin may scan, whatever the memory limit.
  const SCAN_MAX = maxScan < 4194304 ? maxScan : 4194304;
  // Longest array or typed array joined natively (formatting numbers costs ~90 ns each).
  const JOIN_MAX = 524288;
  // Compares a naive native string search may do; a larger search runs in JS (linear, polled).
  const SEARCH_WORK = 8388608;
  // Longest typed array / array sorted natively without a comparator (an array's default order
  // compares elements as strings, ~1 us each at the largest sizes).
  const SORT_MAX = 1048576;
  const ARRAY_SORT_MAX = 262144;
  // Longest source text handed to eval / Function constructors (compile cost is superlinear).
  const SOURCE_MAX = 65536;
  // Longest text JSON.parse accepts (its native loop is linear but never polls).
  const JSON_TEXT_MAX = 4194304;
  // Longest string a per-character native transform (case mapping, normalize, URI coding...)
  // accepts: ~10-60 ns a character, never polled.
  const TEXT_MAX = 8388608;
  // Longest string repeat / padStart / padEnd build.
  const BUILD_MAX = 33554432;
  // Longest array or typed array whose indices Object.keys & co. list (or assign / freeze).
  const KEYS_MAX = 262144;

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
    const now = dateNow();
    if (stopped || now >= nextPoll) {
      nextPoll = now + 1;
      poll();
    }
  }

  function isObjectValue(value) {
    return value !== null && (typeof value === 'object' || typeof value === 'function');
  }

  // Two descriptors reused by every guard installed below, before any guest code runs (a
  // hundred guards, three definitions each: a fresh descriptor object per definition was a tenth
  // of a fresh VM's cost). Each is emptied after use, so it holds no reference.
  const fixedSlot = { value: undefined, writable: false, enumerable: false, configurable: true };
  const methodSlot = { value: undefined, writable: true, enumerable: false, configurable: true };
  // Gives `guarded` the name and length of `original` (built-ins' own are read-only).
  function mirror(guarded, original) {
    fixedSlot.value = original.name;
    defineProperty(guarded, 'name', fixedSlot);
    fixedSlot.value = original.length;
    defineProperty(guarded, 'length', fixedSlot);
    fixedSlot.value = undefined;
  }
  // Defines `holder[name]` as a built-in method is: writable, configurable, not enumerable.
  function installMethod(holder, name, value) {
    methodSlot.value = value;
    defineProperty(holder, name, methodSlot);
    methodSlot.value = undefined;
  }

  // Replaces `holder[name]` by `makeGuard(original)`, keeping the original's name and length.
  function guard(holder, name, makeGuard) {
    const original = holder[name];
    if (typeof original !== 'function') return;
    const guarded = makeGuard(original);
    mirror(guarded, original);
    installMethod(holder, name, guarded);
  }

  // A method (not a constructor) that polls before calling the original.
  function guardPoll(holder, name) {
    guard(holder, name, (original) => ({
      method(...args) {
        pollSoon();
        return apply(original, this, args);
      },
    }).method);
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

  function guardScan(name, checkArgs) {
    // push, pop and at touch one end of the array: only absurd lengths are refused.
    const limit = name === 'push' || name === 'pop' || name === 'at' ? maxScan : SCAN_MAX;
    guard(ArrayProto, name, (original) => ({
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
    }).method);
  }

  const unpolledScans = ['join', 'toLocaleString', 'reverse', 'toReversed', 'slice', 'splice', 'toSpliced',
    'copyWithin', 'sort', 'toSorted', 'shift', 'unshift', 'fill', 'with', 'pop', 'push', 'at'];
  for (let i = 0; i < unpolledScans.length; i++) guardScan(unpolledScans[i], false);
  guardScan('concat', true);

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

  guard(ArrayProto, 'flat', () => ({
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
  }).method);

  guard(ArrayProto, 'flatMap', () => ({
    method(mapper, thisArg) {
      const source = toObjectThis(this, 'flatMap');
      const sourceLength = toLength(source.length);
      if (typeof mapper !== 'function') throw new TypeErrorCtor('flatMap mapper is not a function');
      const target = arraySpeciesCreate(source);
      flattenInto(target, source, sourceLength, 0, 1, mapper, thisArg);
      return target;
    },
  }).method);

  // String search: QuickJS compares naively, O(n*m). A search estimated above SEARCH_WORK
  // compares runs as Knuth-Morris-Pratt in JS (linear and interruptible); smaller ones stay native.
  function toText(value) {
    return typeof value === 'string' ? value : `${value}`;
  }

  function thisText(value, name) {
    if (value === undefined || value === null) {
      throw new TypeErrorCtor('String.prototype.' + name + ' called on null or undefined');
    }
    return toText(value);
  }

  // True when the search must run in JS; polls before a native search of more than POLL_WORK.
  function searchInJs(haystackLength, needleLength) {
    const work = needleLength < 2 || needleLength > haystackLength
      ? haystackLength : haystackLength + (haystackLength - needleLength + 1) * needleLength;
    if (work > POLL_WORK) poll();
    return needleLength >= 1 && needleLength <= haystackLength && work > SEARCH_WORK;
  }

  // How a search over budget runs: a short needle (m*m*4 <= SEARCH_WORK) natively over polled
  // chunks of SEARCH_WORK/m characters (null), a longer one as KMP (its failure table).
  function planSearch(needle, reverse) {
    const m = needle.length;
    return m * m * 4 <= SEARCH_WORK ? null : failureTable(needle, reverse);
  }

  // First index >= from where needle occurs in haystack, or -1.
  function findForward(haystack, needle, plan, from) {
    if (plan !== null) return searchForward(haystack, needle, plan, from);
    const n = haystack.length;
    const m = needle.length;
    const chunk = (SEARCH_WORK / m) | 0;
    for (let start = from; start + m <= n; start += chunk) {
      pollSoon();
      const end = start + chunk + m - 1 < n ? start + chunk + m - 1 : n;
      const found = apply(stringIndexOf, apply(stringSlice, haystack, [start, end]), [needle]);
      if (found >= 0) return start + found;
    }
    return -1;
  }

  // Last index <= from where needle occurs in haystack, or -1.
  function findBackward(haystack, needle, plan, from) {
    if (plan !== null) return searchBackward(haystack, needle, plan, from);
    const m = needle.length;
    const chunk = (SEARCH_WORK / m) | 0;
    for (let end = from + m; end >= m; end -= chunk) {
      pollSoon();
      const start = end - chunk - m + 1 > 0 ? end - chunk - m + 1 : 0;
      const found = apply(stringLastIndexOf, apply(stringSlice, haystack, [start, end]), [needle]);
      if (found >= 0) return start + found;
    }
    return -1;
  }

  // KMP failure table of `needle`, read forwards (`reverse` false) or backwards.
  function failureTable(needle, reverse) {
    const m = needle.length;
    const table = new Int32ArrayCtor(m);
    let k = 0;
    for (let i = 1; i < m; i++) {
      const c = reverse ? needle[m - 1 - i] : needle[i];
      while (k > 0 && (reverse ? needle[m - 1 - k] : needle[k]) !== c) k = table[k - 1];
      if ((reverse ? needle[m - 1 - k] : needle[k]) === c) k++;
      table[i] = k;
    }
    return table;
  }

  // First index >= from where needle occurs in haystack, or -1.
  function searchForward(haystack, needle, table, from) {
    const n = haystack.length;
    const m = needle.length;
    let k = 0;
    for (let i = from; i < n; i++) {
      const c = haystack[i];
      while (k > 0 && needle[k] !== c) k = table[k - 1];
      if (needle[k] === c && ++k === m) return i - m + 1;
    }
    return -1;
  }

  // Last index <= from where needle occurs in haystack, or -1.
  function searchBackward(haystack, needle, table, from) {
    const m = needle.length;
    let k = 0;
    for (let i = from + m - 1; i >= 0; i--) {
      const c = haystack[i];
      while (k > 0 && needle[m - 1 - k] !== c) k = table[k - 1];
      if (needle[m - 1 - k] === c && ++k === m) return i;
    }
    return -1;
  }

  function clampPosition(position, length) {
    const number = +position;
    if (!(number > 0)) return 0;
    return number >= length ? length : number - (number % 1);
  }

  function isRegExpLike(value) {
    const matcher = value[symbolMatch];
    if (matcher !== undefined) return !!matcher;
    try {
      apply(regExpGlobal, value, []);
      return value !== RegExpProto;
    } catch (_) {
      return false;
    }
  }

  // GetSubstitution (ES2024 22.1.3.19.1) for a string pattern: no captures, so `$n` and `$<`
  // stay literal.
  function substitute(matched, string, position, template) {
    const length = template.length;
    let result = '';
    let start = 0;
    for (;;) {
      const dollar = apply(stringIndexOf, template, ['$', start]);
      if (dollar < 0 || dollar + 1 >= length) break;
      const next = template[dollar + 1];
      let piece;
      if (next === '$') piece = '$';
      else if (next === '&') piece = matched;
      else if (next === '`') piece = apply(stringSlice, string, [0, position]);
      else if (next === "'") piece = apply(stringSlice, string, [position + matched.length]);
      else {
        result += apply(stringSlice, template, [start, dollar + 1]);
        start = dollar + 1;
        continue;
      }
      result += apply(stringSlice, template, [start, dollar]) + piece;
      start = dollar + 2;
    }
    return result + apply(stringSlice, template, [start]);
  }

  guard(StringProto, 'indexOf', (original) => ({
    method(searchString, position) {
      if (typeof this === 'string' && typeof searchString === 'string' && this.length <= 128) {
        return apply(original, this, [searchString, position]);
      }
      const string = thisText(this, 'indexOf');
      const needle = toText(searchString);
      if (!searchInJs(string.length, needle.length)) return apply(original, string, [needle, position]);
      const from = clampPosition(position, string.length);
      return findForward(string, needle, planSearch(needle, false), from);
    },
  }).method);

  guard(StringProto, 'lastIndexOf', (original) => ({
    method(searchString, position) {
      if (typeof this === 'string' && typeof searchString === 'string' && this.length <= 128) {
        return apply(original, this, [searchString, position]);
      }
      const string = thisText(this, 'lastIndexOf');
      const needle = toText(searchString);
      if (!searchInJs(string.length, needle.length)) return apply(original, string, [needle, position]);
      const number = +position;
      let from = string.length - needle.length;
      if (number === number) {
        if (number <= 0) from = 0;
        else if (number < from) from = number - (number % 1);
      }
      if (from < 0) return -1;
      return findBackward(string, needle, planSearch(needle, true), from);
    },
  }).method);

  guard(StringProto, 'includes', (original) => ({
    method(searchString, position) {
      if (typeof this === 'string' && typeof searchString === 'string' && this.length <= 128) {
        return apply(original, this, [searchString, position]);
      }
      const string = thisText(this, 'includes');
      if (isObjectValue(searchString) && isRegExpLike(searchString)) {
        throw new TypeErrorCtor('regexp not supported');
      }
      const needle = toText(searchString);
      if (!searchInJs(string.length, needle.length)) return apply(original, string, [needle, position]);
      const from = clampPosition(position, string.length);
      return findForward(string, needle, planSearch(needle, false), from) >= 0;
    },
  }).method);

  guard(StringProto, 'split', (original) => ({
    method(separator, limit) {
      if (typeof this === 'string' && typeof separator === 'string' && this.length <= 128) {
        return apply(original, this, [separator, limit]);
      }
      if (this === undefined || this === null) throw new TypeErrorCtor('String.prototype.split called on null or undefined');
      if (isObjectValue(separator)) {
        const splitter = separator[symbolSplit];
        if (splitter !== undefined && splitter !== null) return apply(splitter, separator, [this, limit]);
      }
      const string = toText(this);
      const count = limit === undefined ? 4294967295 : limit >>> 0;
      const needle = toText(separator);
      if (separator === undefined || !searchInJs(string.length, needle.length)) {
        return apply(original, string, [separator === undefined ? undefined : needle, count]);
      }
      const parts = [];
      if (count === 0) return parts;
      const plan = planSearch(needle, false);
      let size = 0;
      let start = 0;
      for (;;) {
        const found = findForward(string, needle, plan, start);
        if (found < 0) break;
        createData(parts, size++, apply(stringSlice, string, [start, found]));
        if (size === count) return parts;
        start = found + needle.length;
      }
      createData(parts, size, apply(stringSlice, string, [start]));
      return parts;
    },
  }).method);

  function guardReplace(name, all) {
    guard(StringProto, name, (original) => ({
      method(searchValue, replaceValue) {
        if (typeof this === 'string' && typeof searchValue === 'string' && this.length <= 128) {
          return apply(original, this, [searchValue, replaceValue]);
        }
        if (this === undefined || this === null) throw new TypeErrorCtor('String.prototype.' + name + ' called on null or undefined');
        if (isObjectValue(searchValue)) {
          if (all && isRegExpLike(searchValue)) {
            const flags = searchValue.flags;
            if (flags === undefined || flags === null) throw new TypeErrorCtor('cannot convert to object');
            if (apply(stringIndexOf, toText(flags), ['g']) < 0) throw new TypeErrorCtor("regexp must have the 'g' flag");
          }
          const replacer = searchValue[symbolReplace];
          if (replacer !== undefined && replacer !== null) return apply(replacer, searchValue, [this, replaceValue]);
        }
        const string = toText(this);
        const needle = toText(searchValue);
        const functional = typeof replaceValue === 'function';
        const template = functional ? replaceValue : toText(replaceValue);
        if (!searchInJs(string.length, needle.length)) return apply(original, string, [needle, template]);
        const plan = planSearch(needle, false);
        let result = '';
        let end = 0;
        let found = findForward(string, needle, plan, 0);
        if (found < 0) return string;
        while (found >= 0) {
          const replacement = functional
            ? toText(apply(template, undefined, [needle, found, string]))
            : substitute(needle, string, found, template);
          result += apply(stringSlice, string, [end, found]) + replacement;
          end = found + needle.length;
          found = all ? findForward(string, needle, plan, end) : -1;
        }
        return result + apply(stringSlice, string, [end]);
      },
    }).method);
  }
  guardReplace('replace', false);
  guardReplace('replaceAll', true);

  // Sorting without a comparator never polls (a comparator is guest code, which does).
  guard(TypedArrayProto, 'sort', (original) => ({
    method(comparefn) {
      if (comparefn === undefined) {
        const length = apply(typedArrayLength, this, []);
        if (length > SORT_MAX) throw new RangeErrorCtor('typed array too long to sort without a comparator in code mode: ' + length);
        if (length > POLL_WORK) poll();
      }
      return apply(original, this, [comparefn]);
    },
  }).method);
  guard(TypedArrayProto, 'toSorted', (original) => ({
    method(comparefn) {
      if (comparefn === undefined) {
        const length = apply(typedArrayLength, this, []);
        if (length > SORT_MAX) throw new RangeErrorCtor('typed array too long to sort without a comparator in code mode: ' + length);
        if (length > POLL_WORK) poll();
      }
      return apply(original, this, [comparefn]);
    },
  }).method);
  const typedArrayScans = ['set', 'slice', 'subarray', 'fill', 'copyWithin', 'indexOf', 'lastIndexOf', 'includes',
    'toLocaleString', 'reverse', 'toReversed', 'with'];
  for (let i = 0; i < typedArrayScans.length; i++) guardPoll(TypedArrayProto, typedArrayScans[i]);
  // Joining formats every number natively: capped like Array.prototype.join.
  guard(TypedArrayProto, 'join', (original) => ({
    method(...args) {
      const length = apply(typedArrayLength, this, []);
      if (length > JOIN_MAX) throw new RangeErrorCtor('typed array too long to join in code mode: ' + length);
      if (length > POLL_WORK) poll();
      return apply(original, this, args);
    },
  }).method);

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

  // A replacement for a Function-like constructor: same prototype object, name, length and
  // [[Prototype]]; `prototype.constructor` points to it, so `instanceof` and `.constructor` work.
  function guardCompiler(original, parent) {
    const guarded = function (...args) {
      let total = 0;
      for (let i = 0; i < args.length; i++) {
        args[i] = toText(args[i]);
        total += args[i].length;
      }
      checkSource(total);
      return new.target === undefined ? apply(original, undefined, args) : construct(original, args, new.target);
    };
    mirror(guarded, original);
    const prototype = original.prototype;
    defineProperty(guarded, 'prototype', { value: prototype, writable: false, enumerable: false, configurable: false });
    if (parent !== undefined) setPrototypeOf(guarded, parent);
    const slot = getOwnPropertyDescriptor(prototype, 'constructor');
    defineProperty(prototype, 'constructor', {
      value: guarded, writable: slot.writable, enumerable: slot.enumerable, configurable: slot.configurable,
    });
    return guarded;
  }

  const GuardedFunction = guardCompiler(Function, undefined);
  installMethod(globalObject, 'Function', GuardedFunction);
  guardCompiler(AsyncFunction, GuardedFunction);
  guardCompiler(getPrototypeOf(function* () {}).constructor, GuardedFunction);
  guardCompiler(getPrototypeOf(async function* () {}).constructor, GuardedFunction);
  // Replacing the global eval makes a guest's direct `eval(...)` an indirect one (global scope).
  guard(globalObject, 'eval', (original) => ({
    eval(source) {
      if (typeof source !== 'string') return source;
      checkSource(source.length);
      return apply(original, undefined, [source]);
    },
  }).eval);

  // Linear natives bounded by the memory limit: a poll point, so a loop of calls stops within
  // one call; JSON.parse also caps its text, JSON.stringify walks through an identity replacer.
  guard(JSON, 'parse', (original) => ({
    method(...args) {
      const source = toText(args[0]);
      if (source.length > POLL_WORK) poll();
      if (source.length > JSON_TEXT_MAX) {
        throw new RangeErrorCtor('JSON text too long to parse in code mode: ' + source.length + ' characters (at most ' + JSON_TEXT_MAX + ')');
      }
      args[0] = source;
      return apply(original, undefined, args);
    },
  }).method);
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
  guard(JSON, 'stringify', (original) => ({
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
  }).method);
  // Building a string costs ~4 ns a character at the largest sizes: results are capped.
  // A result larger than the whole heap is left to the native, which fails at once allocating it
  // ("code mode memory limit exceeded").
  function checkBuilt(length) {
    if (length > POLL_WORK) pollSoon();
    if (length > BUILD_MAX && length <= maxScan * 8) {
      throw new RangeErrorCtor('string result too long in code mode: ' + length + ' characters (at most ' + BUILD_MAX + ')');
    }
  }
  guard(StringProto, 'repeat', (original) => ({
    method(count) {
      const string = thisText(this, 'repeat');
      const times = +count;
      if (string.length > 0 && times > 0) checkBuilt(string.length * times);
      return apply(original, string, [times]);
    },
  }).method);
  function guardPad(name) {
    guard(StringProto, name, (original) => ({
      method(maxLength, fillString) {
        const string = thisText(this, name);
        const length = +maxLength;
        if (length > string.length) checkBuilt(length);
        return apply(original, string, [length, fillString]);
      },
    }).method);
  }
  guardPad('padStart');
  guardPad('padEnd');
  guardPoll(StringProto, 'concat');
  const stringScans = ['normalize', 'localeCompare', 'toLowerCase', 'toUpperCase', 'toLocaleLowerCase',
    'toLocaleUpperCase', 'trim', 'trimStart', 'trimEnd', 'isWellFormed', 'toWellFormed'];
  function checkText(text) {
    if (text.length > POLL_WORK) pollSoon();
    if (text.length > TEXT_MAX) {
      throw new RangeErrorCtor('string too long for this operation in code mode: ' + text.length + ' characters (at most ' + TEXT_MAX + ')');
    }
  }
  for (let i = 0; i < stringScans.length; i++) {
    const name = stringScans[i];
    guard(StringProto, name, (original) => ({
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
    }).method);
  }
  const uriCodings = ['encodeURI', 'encodeURIComponent', 'decodeURI', 'decodeURIComponent', 'escape', 'unescape'];
  for (let i = 0; i < uriCodings.length; i++) {
    guard(globalObject, uriCodings[i], (original) => ({
      method(...args) {
        const text = toText(args[0]);
        checkText(text);
        return apply(original, undefined, [text]);
      },
    }).method);
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
  const objectScans = ['keys', 'values', 'entries', 'getOwnPropertyNames', 'assign', 'freeze', 'seal'];
  for (let i = 0; i < objectScans.length; i++) {
    guard(Object, objectScans[i], (original) => ({
      method(...args) {
        pollSoon();
        for (let k = 0; k < args.length; k++) checkIndexed(args[k]);
        return apply(original, this, args);
      },
    }).method);
  }
  guard(Reflect, 'ownKeys', (original) => ({
    method(...args) {
      pollSoon();
      checkIndexed(args[0]);
      return apply(original, this, args);
    },
  }).method);
  const objectPolls = ['fromEntries', 'getOwnPropertySymbols', 'isFrozen', 'isSealed'];
  for (let i = 0; i < objectPolls.length; i++) guardPoll(Object, objectPolls[i]);
  // From an array-like (no iterator) the native loop never polls: its length is capped.
  function checkArrayLike(items) {
    if (isObjectValue(items)) {
      const iterator = items[symbolIterator];
      if (iterator === undefined || iterator === null) checkScan(items, SCAN_MAX);
    }
  }
  guard(Array, 'from', (original) => ({
    method(...args) {
      pollSoon();
      checkArrayLike(args[0]);
      return apply(original, this, args);
    },
  }).method);
  guard(getPrototypeOf(Uint8Array), 'from', (original) => ({
    method(...args) {
      pollSoon();
      checkArrayLike(args[0]);
      return apply(original, this, args);
    },
  }).method);
  // Typed array constructors read an array-like argument natively, element by element: the
  // replacement caps its length (an ArrayBuffer, typed array or iterable is bounded otherwise).
  const typedArrayNames = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
    'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
  const TypedArrayCtor = getPrototypeOf(Uint8Array);
  const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const sharedByteLength = typeof SharedArrayBuffer === 'function'
    ? getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get : undefined;
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
  for (let i = 0; i < typedArrayNames.length; i++) {
    const original = globalObject[typedArrayNames[i]];
    if (typeof original !== 'function') continue;
    const guarded = function (...args) {
      if (new.target === undefined) return apply(original, undefined, args);
      const items = args[0];
      if (isObjectValue(items) && !isArray(items) && !isBufferLike(items)) {
        pollSoon();
        checkArrayLike(items);
      }
      return construct(original, args, new.target);
    };
    mirror(guarded, original);
    defineProperty(guarded, 'prototype', { value: original.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(guarded, 'BYTES_PER_ELEMENT', getOwnPropertyDescriptor(original, 'BYTES_PER_ELEMENT'));
    setPrototypeOf(guarded, TypedArrayCtor);
    const slot = getOwnPropertyDescriptor(original.prototype, 'constructor');
    defineProperty(original.prototype, 'constructor', {
      value: guarded, writable: slot.writable, enumerable: slot.enumerable, configurable: slot.configurable,
    });
    installMethod(globalObject, typedArrayNames[i], guarded);
  }
  guardPoll(Array, 'of');

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
  const fromCharCode = String.fromCharCode;
  const codePointAt = String.prototype.codePointAt;
  const charCodeAt = String.prototype.charCodeAt;
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

  // Nondeterministic readings, when the host records or replays the run (a tape, see
  // tape.rs): the clock of `Date.now()`, `new Date()` and `Date()`, `Math.random()` and
  // `performance.now()` are read through `hostReading(kind, live)`, which answers the value the
  // guest sees (the live one, or the one a replay must see again). Kinds: 0 clock, 1 random,
  // 2 monotonic. Everything else of `Date` is the original's (same prototype, parse, UTC).
  // Installed by `install` for such a run only, before any guest code; a run without a tape keeps
  // the engine's own `Date`, `Math.random` and `performance`.
  const hostReading = natives.hostReading;
  function installReadings() {
    const OriginalDate = Date;
    const originalRandom = Math.random;
    const dateToString = OriginalDate.prototype.toString;
    const clockNow = () => hostReading(0, apply(dateNow, OriginalDate, []));
    const ReadDate = function Date(...args) {
      if (new.target === undefined) return apply(dateToString, new OriginalDate(clockNow()), []);
      if (args.length === 0) return construct(OriginalDate, [clockNow()], new.target);
      return construct(OriginalDate, args, new.target);
    };
    defineProperty(ReadDate, 'prototype', { value: OriginalDate.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(ReadDate, 'length', { value: 7, writable: false, enumerable: false, configurable: true });
    defineProperty(ReadDate, 'now', { value: function now() { return clockNow(); }, writable: true, enumerable: false, configurable: true });
    defineProperty(ReadDate, 'parse', { value: OriginalDate.parse, writable: true, enumerable: false, configurable: true });
    defineProperty(ReadDate, 'UTC', { value: OriginalDate.UTC, writable: true, enumerable: false, configurable: true });
    defineProperty(OriginalDate.prototype, 'constructor', { value: ReadDate, writable: true, enumerable: false, configurable: true });
    defineProperty(globalObject, 'Date', { value: ReadDate, writable: true, enumerable: false, configurable: true });
    defineProperty(Math, 'random', {
      value: function random() { return hostReading(1, apply(originalRandom, Math, [])); },
      writable: true, enumerable: false, configurable: true,
    });
    // `performance.now` itself is not configurable: the global becomes an object that
    // inherits the original's members and reads `now` through the tape.
    const perf = globalObject.performance;
    if (perf !== null && typeof perf === 'object' && typeof perf.now === 'function') {
      const originalPerfNow = perf.now;
      const readPerf = create(perf, {
        now: {
          value: function now() { return hostReading(2, apply(originalPerfNow, perf, [])); },
          writable: true, enumerable: true, configurable: true,
        },
      });
      defineProperty(globalObject, 'performance', { value: readPerf, writable: true, enumerable: false, configurable: true });
    }
  }

  return freeze({ __proto__: null, install, compile, begin, settle, fireTimer });
}
