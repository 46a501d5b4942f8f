//! The worker process of the sandbox's own tests: the real worker, or, when its first argument
//! names one, a worker that misbehaves at its first step (`garbage`, `flood`, `stall`,
//! `open-file`, `reading-without-tape`, `settling-unknown`, `segfault`, `bus-error`,
//! `stack-overflow`). Built only with the `test-worker` feature; never installed.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let misbehaviour = std::env::args()
        .nth(1)
        .and_then(|arg| codemode_sandbox::Misbehaviour::from_arg(&arg));
    codemode_sandbox::serve_misbehaving_worker(misbehaviour)
}
