//! Integration tests of codemode-core: one test binary, one module per area.

mod durable;
mod embedding;
mod exec;
mod memory_budget;
mod observe;
#[cfg(feature = "otel")]
mod otel;
mod runs_end;
mod scale;
mod support;
mod wait;
