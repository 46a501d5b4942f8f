// The cut of a run's value too large for what is left of its output budget, for the code mode
// bootstrap (bootstrap.js `succeed`), loaded into a VM only when a value must be cut. Compiled
// once per process to bytecode, like the bootstrap.
//
// Its one function receives the bootstrap's captures (`env`, a null-prototype object) and
// returns `cut(value, budget)`. It runs after guest code, over plain data the bootstrap's safe
// adapter made: it uses `env` only, never a global or a property of a built-in.
(function (env) {
  'use strict';
  const { apply, charCodeAt, create, define, isArray, objectKeys, stringify, stringSlice, utf8Bytes } = env;

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

  return cut;
})
