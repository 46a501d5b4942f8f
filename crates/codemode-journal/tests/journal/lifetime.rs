//! What a run's row keeps (its scope), how long it lives (TTL), how many may live (the cap),
//! and the deletes by session and agent run.

use codemode_journal::{Claim, JournalError, MAX_JOURNALED_RUNS, Scope};

use crate::{NOW, backends, record, scope};

#[tokio::test]
async fn the_scope_is_stored_and_deletes_by_session_and_agent_run_match_it() {
    for backend in backends("scope").await {
        let store = &backend.store;
        let kind = backend.kind;
        let later = NOW + 60_000;
        let first = scope("agent-1", "session-1", "key-1");
        let second = scope("agent-2", "session-2", "key-2");
        let partial = Scope {
            agent_run_id: None,
            session_id: None,
            session_key: Some("key-3".to_owned()),
        };
        store
            .create(&record("cm_s1", first.clone(), later), "h", NOW, NOW)
            .await
            .unwrap();
        store
            .create(&record("cm_s2", second.clone(), later), "h", NOW, NOW)
            .await
            .unwrap();
        store
            .create(&record("cm_s3", partial.clone(), later), "h", NOW, NOW)
            .await
            .unwrap();
        store
            .create(&record("cm_s4", first.clone(), later), "h", NOW, NOW)
            .await
            .unwrap();
        for (run, expected) in [("cm_s1", &first), ("cm_s2", &second), ("cm_s3", &partial)] {
            let journal = store.load(run, NOW).await.unwrap().expect("stored");
            assert_eq!(&journal.record.scope, expected, "{kind:?}: {run}");
            let alone = store.scope(run, NOW).await.unwrap();
            assert_eq!(alone.as_ref(), Some(expected), "{kind:?}: {run}");
        }
        assert_eq!(
            store.scope("cm_s1", later).await.unwrap(),
            None,
            "{kind:?}: expired"
        );
        assert_eq!(store.scope("cm_none", NOW).await.unwrap(), None, "{kind:?}");
        // A session matches by its id or its key; others' runs stay.
        assert_eq!(
            store.delete_session("session-x").await.unwrap(),
            0,
            "{kind:?}"
        );
        assert_eq!(store.delete_session("key-3").await.unwrap(), 1, "{kind:?}");
        assert_eq!(
            store.delete_session("session-1").await.unwrap(),
            2,
            "{kind:?}"
        );
        assert!(
            store.load("cm_s1", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert!(
            store.load("cm_s4", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert!(
            store.load("cm_s3", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert_eq!(
            store.delete_agent_run("agent-1").await.unwrap(),
            0,
            "{kind:?}"
        );
        assert_eq!(
            store.delete_agent_run("agent-2").await.unwrap(),
            1,
            "{kind:?}"
        );
        assert_eq!(store.count(NOW).await.unwrap(), 0, "{kind:?}");
        backend.finish().await;
    }
}

#[tokio::test]
async fn an_expired_journal_is_gone_and_deleting_the_expired_removes_its_rows() {
    for backend in backends("ttl").await {
        let store = &backend.store;
        let kind = backend.kind;
        let expires = NOW + 1_000;
        store
            .create(
                &record("cm_short", Scope::default(), expires),
                "h",
                NOW,
                NOW,
            )
            .await
            .unwrap();
        store
            .create(
                &record("cm_long", Scope::default(), NOW + 60_000),
                "h",
                NOW,
                NOW,
            )
            .await
            .unwrap();
        assert_eq!(store.count(NOW).await.unwrap(), 2, "{kind:?}");
        // At its expiry it is no longer found, nor claimed, nor counted.
        assert!(
            store.load("cm_short", expires).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert_eq!(
            store
                .claim("cm_short", "h", expires, expires + 1)
                .await
                .unwrap(),
            Claim::Missing,
            "{kind:?}"
        );
        assert_eq!(store.count(expires).await.unwrap(), 1, "{kind:?}");
        // Deleting the expired removes it for good: not found even at an earlier time.
        assert_eq!(store.delete_expired(expires).await.unwrap(), 1, "{kind:?}");
        assert!(
            store.load("cm_short", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert!(
            store.load("cm_long", expires).await.unwrap().is_some(),
            "{kind:?}"
        );
        // Releasing sets a new expiry.
        store.release("cm_long", 1, NOW + 2_000).await.unwrap();
        assert!(
            store.load("cm_long", NOW + 1_999).await.unwrap().is_some(),
            "{kind:?}"
        );
        assert!(
            store.load("cm_long", NOW + 2_000).await.unwrap().is_none(),
            "{kind:?}"
        );
        backend.finish().await;
    }
}

#[tokio::test]
async fn at_most_64_journals_live_at_once_and_expired_ones_make_room() {
    for backend in backends("cap").await {
        let store = &backend.store;
        let kind = backend.kind;
        assert_eq!(MAX_JOURNALED_RUNS, 64);
        // The first expires early; the others live long.
        store
            .create(
                &record("cm_cap_0", Scope::default(), NOW + 10),
                "h",
                NOW,
                NOW,
            )
            .await
            .unwrap();
        for n in 1..MAX_JOURNALED_RUNS {
            let run = record(&format!("cm_cap_{n}"), Scope::default(), NOW + 60_000);
            store.create(&run, "h", NOW, NOW).await.unwrap();
        }
        assert_eq!(store.count(NOW).await.unwrap(), 64, "{kind:?}");
        let one_more = record("cm_cap_64", Scope::default(), NOW + 60_000);
        assert!(
            matches!(
                store.create(&one_more, "h", NOW, NOW).await,
                Err(JournalError::TooManyRuns)
            ),
            "{kind:?}"
        );
        assert!(
            store.load("cm_cap_64", NOW).await.unwrap().is_none(),
            "{kind:?}: nothing written"
        );
        // Once the first has expired, creating the 65th takes its room.
        store
            .create(&one_more, "h", NOW + 10, NOW + 10)
            .await
            .unwrap();
        assert_eq!(store.count(NOW + 10).await.unwrap(), 64, "{kind:?}");
        assert!(
            store.load("cm_cap_0", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        backend.finish().await;
    }
}
