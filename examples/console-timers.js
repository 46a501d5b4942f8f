// Console lines and timers: output items in program order, timers after microtasks.
console.log("searching for %s", "echo");
const [first] = await tools.search("echo", { limit: 1 });
console.info("found %j", { id: first.id });
const started = Date.now();
await new Promise((resolve) => setTimeout(resolve, 50));
let ticks = 0;
await new Promise((resolve) => {
  const every = setInterval(() => {
    ticks += 1;
    if (ticks === 3) {
      clearInterval(every);
      resolve();
    }
  }, 10);
});
console.warn("waited at least %d ms over %d interval ticks", 50, ticks);
return { waited: Date.now() - started >= 50, ticks, bytes: new TextEncoder().encode("é").length };
