//! The receipt of a nested call that passed `toolCallTimeoutMs`: cancelled at the host, it may
//! or may not have taken effect.

use std::sync::Arc;

use codemode_journal::{Receipt, ReceiptKey, ReceiptState};
use serde_json::Value;

use super::RunJournal;

impl RunJournal {
    /// A call cancelled at its deadline. A side-effecting one is recorded `unknown`, exactly as
    /// a replay records a call a crash interrupted: a replay never runs it again and the guest
    /// gets "outcome unknown". A read-only one records the error the guest got, like any
    /// failure.
    pub fn after_timeout(
        self: &Arc<Self>,
        key: ReceiptKey,
        catalog_id: String,
        input_hash: String,
        side_effecting: bool,
        result: &Result<Value, String>,
    ) {
        if !side_effecting {
            return self.after_call(key, catalog_id, input_hash, side_effecting, result);
        }
        Self::push_receipt(
            &mut self.lock(),
            Receipt {
                key,
                catalog_id,
                input_hash,
                side_effecting,
                state: ReceiptState::Unknown,
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
