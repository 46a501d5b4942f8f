// A nested call longer than the 10 s exec budget: exec returns `waiting`, the CLI calls `wait`,
// and the run resumes with the result.
text("sleeping past the budget");
const result = await tools.sleep({ ms: 11000 });
text("resumed");
return result;
