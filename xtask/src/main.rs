//! Project automation: `cargo xtask ci`, `cargo xtask bench`, `cargo xtask e2e`.
fn main() {}
