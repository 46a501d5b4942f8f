// Cell 2 of 2 (after examples/results-across-cells.js in the same session): use what the first
// cell saved.
const issues = await results.load("issues");
return { keys: (await results.list()).map((entry) => entry.key), loaded: issues !== null };
