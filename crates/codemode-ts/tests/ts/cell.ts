// A realistic code-mode cell: search, describe, call in parallel, combine.
import type { CatalogEntry } from "codemode";

interface Issue {
  id: number;
  title: string;
  labels: readonly string[];
  assignee?: { login: string } | null;
}

enum Priority {
  Low = 1,
  Normal,
  High,
}

namespace Scoring {
  export const weights = { bug: 3, security: 5 } as const satisfies Record<string, number>;
  export function score(issue: Issue): number {
    return issue.labels.reduce((sum, label) => sum + (weights[label as keyof typeof weights] ?? 0), 0);
  }
}

class Summary {
  constructor(private readonly repo: string, public total = 0) {}
  line(issue: Issue, priority: Priority): string {
    return `${this.repo}#${issue.id} [${Priority[priority]}] ${issue.title}`;
  }
}

const found: CatalogEntry[] = await tools.search("github issues", 5);
const listTool = found.find((entry) => entry.name === "list_issues")!;
const repos = ["codemode-rs", "openclaw"] as const;

const pages = await Promise.all(
  repos.map((repo) => tools.call(listTool.id, { repo, state: "open" }) as Promise<Issue[]>),
);

const lines: string[] = [];
for (const [index, issues] of pages.entries()) {
  const summary = new Summary(repos[index]!);
  for (const issue of issues) {
    const priority = Scoring.score(issue) >= 5 ? Priority.High : Priority.Normal;
    summary.total += 1;
    if (priority === Priority.High || issue.assignee == null) {
      lines.push(summary.line(issue, priority));
    }
  }
}

return { count: lines.length, lines: lines.slice(0, 20) };
