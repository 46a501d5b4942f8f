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

/// The state file holds tool data and who may resume which run: it and its `-wal` and `-shm`
/// files are created readable by their owner only, whatever the umask.
#[cfg(unix)]
#[tokio::test]
async fn the_sqlite_file_and_its_wal_and_shm_are_created_for_their_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = std::env::temp_dir().join(crate::unique("codemode-journal-mode"));
    std::fs::create_dir_all(&folder).expect("a temp folder");
    let path = folder.join("state.db");
    let store = codemode_journal::open(&format!("sqlite:{}", path.display()))
        .await
        .expect("sqlite");
    store
        .save_transport_session("s-1", "state", NOW, NOW + 1_000)
        .await
        .expect("a write");
    for suffix in ["", "-wal", "-shm"] {
        let file = format!("{}{suffix}", path.display());
        let mode = std::fs::metadata(&file)
            .unwrap_or_else(|error| panic!("{file}: {error}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}: {:o}", mode & 0o777);
    }
    drop(store);
    let _ = std::fs::remove_dir_all(folder);
}
