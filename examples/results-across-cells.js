// Cell 1 of 2 (run with examples/results-next-cell.js): keep a large result out of the model's
// context, return only a summary.
const issues = await Issues.list({});
const saved = await results.save("issues", issues);
return { saved, count: Array.isArray(issues) ? issues.length : Object.keys(issues).length };
