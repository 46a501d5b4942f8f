// A failing tool becomes a catchable Error; output before it is kept.
text("calling the fail tool");
try {
  await tools.fail({ message: "disk on fire" });
  return "unreachable";
} catch (error) {
  return { caught: String(error.message) };
}
