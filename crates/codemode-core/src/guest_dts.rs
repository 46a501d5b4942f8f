//! `guest/globals.d.ts`: the guest runtime's own API as TypeScript declarations, readable with
//! `API.read("guest/globals.d.ts")` beside the MCP declaration files.

/// The virtual path of the file.
pub const PATH: &str = "guest/globals.d.ts";

/// What `API.list` says the file declares.
pub const DESCRIPTION: &str =
    "The code mode runtime: tools, output, console, timers, encoders and the results store.";

// The file in two halves around the host's source name, so that the default text is a `const`
// and a host's own source name gives the same text with its name.
macro_rules! dts_head {
    () => {
        r#"/** A catalogued tool, compactly (no schema). */
interface ToolCatalogEntry { id: string; name: string; description: string; source: ""#
    };
}
macro_rules! dts_tail {
    () => {
        r#"" | "client"; sourceName?: string; label?: string }

/** Every catalogued tool (MCP tools are under `MCP`). Frozen. */
declare const ALL_TOOLS: readonly ToolCatalogEntry[];

declare const tools: {
  /** Ranked search over the catalog. */
  search(query: string, options?: { limit?: number }): Promise<ToolCatalogEntry[]>;
  /** One tool with its JSON Schema. */
  describe(id: string): Promise<ToolCatalogEntry & { parameters: unknown }>;
  /** Calls a tool by exact id; a failure rejects with a catchable Error. */
  call(id: string, input?: unknown): Promise<unknown>;
  readonly [safeName: string]: unknown;
};

/** Adds a text output item: strings verbatim, other values as compact JSON. */
declare function text(value: unknown): void;
/** Adds a JSON output item (a JSON-safe copy: functions dropped, cycles marked). */
declare function json(value: unknown): void;
/** Parks the run now; `wait` continues it. */
declare function yield_control(reason?: string): Promise<void>;

/**
 * One text output item per call, formatted like Node's util.format (%s %d %i %f %j %o %O %%),
 * objects as compact JSON; every level but `log` is prefixed ("warn: ..."). Counted against the
 * output limit like text().
 */
declare const console: {
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};

/**
 * Timers are pending work: a run with a timer pending does not complete, and parks (`waiting`)
 * at its deadline. Callbacks run after microtasks, in due order, only inside this run's own
 * exec/wait calls.
 */
declare function setTimeout<A extends unknown[]>(callback: (...args: A) => void, ms?: number, ...args: A): number;
declare function setInterval<A extends unknown[]>(callback: (...args: A) => void, ms?: number, ...args: A): number;
declare function clearTimeout(id?: number): void;
declare function clearInterval(id?: number): void;
declare function queueMicrotask(callback: () => void): void;

/** UTF-8 only. */
declare class TextEncoder {
  readonly encoding: "utf-8";
  encode(input?: string): Uint8Array;
  encodeInto(input: string, destination: Uint8Array): { read: number; written: number };
}
/** UTF-8 only; `fatal` throws a TypeError on invalid bytes instead of writing U+FFFD. */
declare class TextDecoder {
  constructor(label?: "utf-8" | "utf8", options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: "utf-8";
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: ArrayBuffer | ArrayBufferView): string;
}
/** Deep copy of JSON data, Date, Map, Set, ArrayBuffer, typed arrays, DataView and Error. */
declare function structuredClone<T>(value: T): T;
declare function atob(data: string): string;
declare function btoa(data: string): string;

/**
 * Values kept across the cells of this session: save a large result here and return a summary.
 * Keys are 1 to 128 characters; the store is bounded in entries and bytes.
 */
declare const results: {
  save(key: string, value: unknown): Promise<{ key: string; bytes: number }>;
  load(key: string): Promise<unknown>;
  list(): Promise<{ key: string; bytes: number }[]>;
  delete(key: string): Promise<boolean>;
};

declare const API: {
  /** The declaration files: this one and, when MCP servers are visible, `mcp/*.d.ts`. */
  list(prefix?: string): Promise<{ path: string; description: string; bytes: number }[]>;
  read(path: string): Promise<string>;
};
"#
    };
}

/// The file with the default host source (`openclaw`): what [`text`] gives for it.
pub const TEXT: &str = concat!(dts_head!(), "openclaw", dts_tail!());

/// The file for a host whose own tools have the source `host_source` (`ToolCatalogEntry.source`
/// is `"<host_source>" | "client"`).
pub fn text(host_source: &str) -> String {
    format!("{}{host_source}{}", dts_head!(), dts_tail!())
}
