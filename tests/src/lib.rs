//! Workspace-level end-to-end tests (SPEC §13).
