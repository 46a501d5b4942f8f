// Nondeterministic readings, for the code mode bootstrap (bootstrap.js), when the host records
// or replays a run (a tape, see tape.rs): the clock of `Date.now()`, `new Date()` and `Date()`,
// `Math.random()` and `performance.now()` are read through `hostReading(kind, live)`, which
// answers the value the guest sees (the live one, or the one a replay must see again). Kinds:
// 0 clock, 1 random, 2 monotonic. Everything else of `Date` is the original's (same prototype,
// parse, UTC). A run without a tape keeps the engine's own `Date`, `Math.random` and
// `performance`, and never loads this code. Compiled once per process to bytecode, like the
// bootstrap.
//
// Its one function receives the bootstrap's captures it needs (`env`, a null-prototype object)
// and installs the readings. It runs while the run's setup is installed, before any guest code,
// so it may read `Date`, `Math` and `performance` from the global object.
(function (env) {
  'use strict';
  const { apply, construct, create, dateNow, defineProperty, globalObject, hostReading } = env;
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
})
