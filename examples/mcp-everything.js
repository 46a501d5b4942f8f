// Real MCP servers (run `cargo xtask npm` once): read the declarations, then call through MCP.
const files = await API.list("mcp");
text(files.map((f) => `${f.path} (${f.bytes} bytes)`).join("\n"));
const header = await API.read("mcp/everything.d.ts");
text(header.split("\n").filter((line) => line.includes("function echo")).join("\n"));
const echoed = await MCP.everything.echo({ message: "hello from code mode" });
const sum = await tools.add({ a: 1, b: 2 });
// server-filesystem was started with the `examples` folder as its allowed root.
const listing = await MCP.filesystem.listDirectory({ path: "." });
if (listing.isError) throw new Error(listing.content[0].text);
const names = listing.content[0].text.split("\n").map((line) => line.replace(/^\[FILE\] /, ""));
return { echoed: echoed.content[0].text, sum: sum.sum, hasThisFile: names.includes("mcp-everything.js") };
