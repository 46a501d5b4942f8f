// The guards of the string searches, for the code mode guard kit (bootstrap/guards.js): indexOf,
// lastIndexOf, includes, split, replace and replaceAll. Loaded into a VM on the first of them a
// program touches, so a program that touches only other guarded built-ins never loads this code.
// Compiled once per process to bytecode, like the bootstrap.
//
// Its one function receives the kit's env (the bootstrap's captures, with the kit's `createData`,
// `thisText` and `toText`) and returns `makerOf(name)`: the maker of the guard of
// `String.prototype[name]`, as guards.js `findMaker` answers. All of it runs after guest code
// may have run: it uses `env` only, never a global or a property of a built-in, and it assigns no
// array element (a guest setter on Array.prototype could see it).
(function (env) {
  'use strict';
  const {
    apply, createData, Int32ArrayCtor, isObjectValue, poll, POLL_WORK, pollSoon, regExpGlobal,
    RegExpProto, SEARCH_WORK, stringIndexOf, stringLastIndexOf, stringSlice, symbolMatch,
    symbolReplace, symbolSplit, thisText, toText, TypeErrorCtor,
  } = env;

  // String search: QuickJS compares naively, O(n*m). A search estimated above SEARCH_WORK
  // compares runs as Knuth-Morris-Pratt in JS (linear and interruptible); smaller ones stay native.

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

  function replaceMaker(name, all) {
    return (original) => ({
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
    }).method;
  }

  // The maker of the guard of String.prototype[name], one of the searches above.
  function makerOf(name) {
    if (name === 'replace' || name === 'replaceAll') return replaceMaker(name, name === 'replaceAll');
    if (name === 'indexOf') {
      return (original) => ({
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
      }).method;
    }
    if (name === 'lastIndexOf') {
      return (original) => ({
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
      }).method;
    }
    if (name === 'includes') {
      return (original) => ({
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
      }).method;
    }
    if (name === 'split') {
      return (original) => ({
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
      }).method;
    }
    throw new TypeErrorCtor('code mode has no search guard for ' + name);
  }

  return makerOf;
})
