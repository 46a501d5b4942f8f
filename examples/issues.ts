// The Issues namespace of the demo-issues plugin, in TypeScript.
interface Issue { number: number; title: string; state: "open" | "closed"; labels: string[] }
enum Verdict { Keep = "keep", Close = "close" }

const open = (await Issues.list({ state: "open" })) as Issue[];
const verdicts = open.map((issue): [number, Verdict] =>
  [issue.number, issue.labels.includes("docs") ? Verdict.Close : Verdict.Keep]);
for (const [number, verdict] of verdicts) {
  if (verdict === Verdict.Close) await Issues.update(number, { state: "closed" });
}
const still = (await namespaces.Issues.list({ state: "open" })) as Issue[];
return { closed: verdicts.filter(([, v]) => v === Verdict.Close).length, stillOpen: still.map((i) => i.number) };
