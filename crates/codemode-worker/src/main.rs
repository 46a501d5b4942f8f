//! `codemode-worker`: the worker process of `isolation: "process"`. A host (`codemode-core`
//! through `codemode-sandbox`'s worker pool) starts it with an empty environment and pipes for
//! stdin and stdout; it serves one run at a time, each in a fresh QuickJS VM, until its stdin
//! closes. On Linux it closes inherited descriptors, sets `RLIMIT_AS`, `RLIMIT_NOFILE` and
//! `RLIMIT_CORE`, and installs a seccomp filter before it greets its host.
//!
//! The host finds it through the pool's config, else `CODEMODE_WORKER`, else next to its own
//! executable. The `codemode` command does not need it: it is its own worker (`codemode worker`).
//! All of it is [`codemode_worker::serve_worker`]; this file is only its binary.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    codemode_worker::serve_worker()
}
