// Nested calls run in parallel with Promise.all.
const sums = await Promise.all([1, 2, 3, 4].map((n) => tools.add({ a: n, b: n })));
json(sums);
return sums.map((s) => s.sum).reduce((a, b) => a + b, 0);
