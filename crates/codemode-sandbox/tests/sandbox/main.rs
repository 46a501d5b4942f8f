//! Integration tests of codemode-sandbox: one test binary, one module per area.

mod bridge;
mod deferred;
mod invariants;
mod isolation;
mod lazy_roots;
mod pool;
mod run;
mod stop;
mod support;
mod suspend;
mod tape;
mod teardown;
#[path = "../timing/mod.rs"]
mod timing;
