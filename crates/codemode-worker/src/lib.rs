//! The worker side of code mode's process isolation: a process that serves a host's steps on its
//! stdin and stdout, one run at a time, each in a fresh VM of `codemode-engine`, and that drops
//! every privilege it does not need first (on Linux: descriptors, resource limits, a seccomp
//! filter). [`serve_worker`] is the whole of it; the `codemode-worker` binary and the `codemode`
//! command's hidden `worker` subcommand call it. Its `protocol` module is the frames both sides
//! of the pipe exchange.
//!
//! It must not know the host: no worker pool, no async driver, no tokio, no parked-run store
//! (`codemode-sandbox` holds those, and the host side of the pipe). It knows no rquickjs either:
//! the VM is `codemode-engine`'s, whose step it runs as it is.
//!
//! **This crate is an internal boundary**, used by `codemode-sandbox`: the `protocol` module
//! (hidden from the docs, no stability promise) changes with it, without notice, and a host and
//! its workers come from the same build (the greeting checks the protocol's version).
//!
//! Feature flags: none.

mod lockdown;
#[doc(hidden)]
pub mod protocol;
mod worker_side;

// The engine's modules and types, named as they were when both lived in one crate.
use codemode_engine::{
    BridgeHost, BridgeRequest, Limits, MAX_JSON_DEPTH, OutputItem, PendingCall, ReadingKind,
    RequestId, RunError, Tape, Truncation, codec, engine, install,
};

pub use lockdown::ADDRESS_SPACE_FLAG;
pub use worker_side::serve_worker;
#[doc(hidden)]
pub use worker_side::{Misbehaviour, serve_misbehaving_worker};
