// Find a tool, read its schema, call it, and use a convenience function.
const hits = await tools.search("add numbers");
const add = await tools.describe(hits[0].id);
text(`using ${add.id}: ${add.description}`);
const viaCall = await tools.call(add.id, { a: 2, b: 3 });
const viaName = await tools.add({ a: 40, b: 2 });
return { viaCall, viaName, catalog: ALL_TOOLS.map((t) => t.id) };
