//! The receipt of a nested call that passed `toolCallTimeoutMs`: cancelled at the host, it may
//! or may not have taken effect.

use std::sync::Arc;

use codemode_journal::{Receipt, ReceiptState};
use serde_json::Value;

use super::{LiveCall, RunJournal};

impl RunJournal {
    /// A call cancelled at its deadline. A side-effecting one is recorded `unknown`, exactly as
    /// a replay records a call a crash interrupted: a replay never runs it again and the guest
    /// gets "outcome unknown". A read-only one records the error the guest got, like any
    /// failure.
    pub fn after_timeout(self: &Arc<Self>, call: LiveCall, result: &Result<Value, String>) {
        if !call.0.side_effecting {
            return self.after_call(call, result);
        }
        Self::push_receipt(
            &mut self.lock(),
            Receipt {
                state: ReceiptState::Unknown,
                ..call.0
            },
        );
        // Durable now, like the `started` receipt it replaces.
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let journal = Arc::clone(self);
        handle.spawn(async move {
            if let Err(error) = journal.flush().await {
                tracing::warn!(target: "codemode", %error, "journal write failed");
            }
        });
    }
}
