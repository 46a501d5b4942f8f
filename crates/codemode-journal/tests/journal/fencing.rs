//! Claims and epochs: a host whose run was taken over cannot write to it any more.

use codemode_journal::{Batch, Claim, JournalError, Reading, Scope};

use crate::{NOW, backends, record};

fn reading(ordinal: u64) -> Batch {
    Batch {
        readings: vec![Reading {
            kind: 0,
            ordinal,
            value: ordinal as f64,
        }],
        ..Batch::default()
    }
}

#[tokio::test]
async fn a_stale_host_s_writes_are_refused_after_another_takes_the_run_over() {
    for backend in backends("fencing").await {
        let store = &backend.store;
        let kind = backend.kind;
        store
            .create(
                &record("cm_fence", Scope::default(), NOW + 60_000),
                "host-a",
                NOW,
                NOW + 5_000,
            )
            .await
            .unwrap();
        // Held by host-a: host-b is refused until the hold passes.
        assert_eq!(
            store
                .claim("cm_fence", "host-b", NOW + 1, NOW + 9_000)
                .await
                .unwrap(),
            Claim::Busy,
            "{kind:?}"
        );
        assert_eq!(
            store
                .claim("cm_nothing", "host-b", NOW, NOW + 9_000)
                .await
                .unwrap(),
            Claim::Missing,
            "{kind:?}"
        );
        // host-a gives it back and takes it again: same epoch, its live VM is still the truth.
        store.release("cm_fence", 1, NOW + 60_000).await.unwrap();
        assert_eq!(
            store
                .claim("cm_fence", "host-a", NOW + 2, NOW + 5_000)
                .await
                .unwrap(),
            Claim::Held {
                epoch: 1,
                live_here: true
            },
            "{kind:?}"
        );
        store.append("cm_fence", 1, &reading(0)).await.unwrap();
        // host-a dies holding it; once the hold passes, host-b takes it over under epoch 2.
        assert_eq!(
            store
                .claim("cm_fence", "host-b", NOW + 5_000, NOW + 15_000)
                .await
                .unwrap(),
            Claim::Held {
                epoch: 2,
                live_here: false
            },
            "{kind:?}"
        );
        // host-a comes back: every write under epoch 1 is refused.
        assert!(
            matches!(
                store.append("cm_fence", 1, &reading(1)).await,
                Err(JournalError::Fenced)
            ),
            "{kind:?}"
        );
        assert!(
            matches!(
                store.release("cm_fence", 1, NOW + 1).await,
                Err(JournalError::Fenced)
            ),
            "{kind:?}"
        );
        store.delete("cm_fence", Some(1)).await.unwrap();
        let journal = store
            .load("cm_fence", NOW)
            .await
            .unwrap()
            .expect("not deleted by the stale host");
        assert_eq!(journal.epoch, 2, "{kind:?}");
        assert_eq!(
            journal.readings.len(),
            1,
            "{kind:?}: the stale write left nothing"
        );
        // host-b writes under epoch 2, and taking it back makes host-a's epoch 3.
        store.append("cm_fence", 2, &reading(1)).await.unwrap();
        store.release("cm_fence", 2, NOW + 60_000).await.unwrap();
        assert_eq!(
            store
                .claim("cm_fence", "host-a", NOW + 5_001, NOW + 20_000)
                .await
                .unwrap(),
            Claim::Held {
                epoch: 3,
                live_here: false
            },
            "{kind:?}"
        );
        assert!(
            matches!(
                store.append("cm_fence", 2, &reading(2)).await,
                Err(JournalError::Fenced)
            ),
            "{kind:?}"
        );
        // The holder's own delete removes it.
        store.delete("cm_fence", Some(3)).await.unwrap();
        assert!(
            store.load("cm_fence", NOW).await.unwrap().is_none(),
            "{kind:?}"
        );
        assert!(
            matches!(
                store.append("cm_fence", 3, &reading(3)).await,
                Err(JournalError::Fenced)
            ),
            "{kind:?}: a deleted run takes no writes"
        );
        backend.finish().await;
    }
}
