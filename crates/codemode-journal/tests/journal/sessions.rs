//! Transport sessions kept beside the journals: saved, replaced, expired and forgotten.

use crate::{NOW, backends};

#[tokio::test]
async fn transport_sessions_are_kept_until_they_expire_or_are_forgotten() {
    for backend in backends("sessions").await {
        let store = &backend.store;
        let kind = backend.kind;
        let state = r#"{"initialize_params":{"protocolVersion":"2025-06-18"}}"#;
        store
            .save_transport_session("s-1", state, NOW, NOW + 1_000)
            .await
            .unwrap();
        store
            .save_transport_session("s-2", "two", NOW, NOW + 5_000)
            .await
            .unwrap();
        assert_eq!(
            store
                .load_transport_session("s-1", NOW)
                .await
                .unwrap()
                .as_deref(),
            Some(state),
            "{kind:?}"
        );
        assert_eq!(
            store
                .load_transport_session("s-unknown", NOW)
                .await
                .unwrap(),
            None,
            "{kind:?}"
        );
        // Saved again: replaced, with its new expiry.
        store
            .save_transport_session("s-2", "two again", NOW, NOW + 9_000)
            .await
            .unwrap();
        assert_eq!(
            store
                .load_transport_session("s-2", NOW + 6_000)
                .await
                .unwrap()
                .as_deref(),
            Some("two again"),
            "{kind:?}"
        );
        // Expired: not found; forgotten: not found; neither counts as a journaled run.
        assert_eq!(
            store
                .load_transport_session("s-1", NOW + 1_000)
                .await
                .unwrap(),
            None,
            "{kind:?}"
        );
        store.delete_transport_session("s-2").await.unwrap();
        assert_eq!(
            store.load_transport_session("s-2", NOW).await.unwrap(),
            None,
            "{kind:?}"
        );
        assert_eq!(store.count(NOW).await.unwrap(), 0, "{kind:?}");
        backend.finish().await;
    }
}
