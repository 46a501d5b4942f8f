//! Integration tests of codemode-ts: one test binary, one module per area.

mod snapshots;
mod transform;
