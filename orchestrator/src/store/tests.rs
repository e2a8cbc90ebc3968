//! The run store on SQLite, and on PostgreSQL when a server answers.

use super::*;
use crate::state::{DecisionKind, EventKind, RunState, Stakes};

/// A scratch PostgreSQL store, when a server answers.
async fn scratch_postgres(label: &str) -> Option<Store> {
    let url = tessera_db::test_utils::scratch_postgres_url(label).await?;
    Some(Store::connect(&url).await.expect("scratch database migrates"))
}

async fn sqlite() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    (dir, Store::connect(&url).await.unwrap())
}

/// Runs `check` against SQLite, and against PostgreSQL when a server answers.
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite_backend {
            $(#[tokio::test]
            async fn $name() {
                let (_dir, store) = super::sqlite().await;
                super::$name(store).await;
            })*
        }
        mod postgres_backend {
            $(#[tokio::test]
            async fn $name() {
                if let Some(store) = super::scratch_postgres(stringify!($name)).await {
                    assert_eq!(store.backend(), super::Backend::Postgres);
                    super::$name(store).await;
                }
            })*
        }
    };
}

both_backends!(
    runs_insert_once_and_transition_only_from_expected_states,
    events_are_numbered_and_deduplicated,
    decisions_queue_in_order_until_finished,
    decisions_keep_their_outcome,
    subtask_rows_upsert,
);

async fn decisions_keep_their_outcome(store: Store) {
    store.push_decision("r", Some(0), DecisionKind::Retry, None).await.unwrap();
    store.push_decision("r", None, DecisionKind::Cancel, None).await.unwrap();
    store.push_decision("r", Some(1), DecisionKind::Approve, None).await.unwrap();
    let failed = DecisionOutcome {
        outcome: "failed: refused".into(),
        ok: false,
        error: Some("refused".into()),
        revert: Some("TaskEscrowTooEarly(..)".into()),
    };
    store.record_decision("r", 1, &failed).await.unwrap();
    let fine =
        DecisionOutcome { outcome: "cancelling".into(), ok: true, error: None, revert: None };
    store.record_decision("r", 2, &fine).await.unwrap();
    let all = store.decisions("r").await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        (all[0].ok, all[0].error.as_deref(), all[0].revert.as_deref()),
        (Some(false), Some("refused"), Some("TaskEscrowTooEarly(..)"))
    );
    assert_eq!((all[1].ok, all[1].outcome.as_deref()), (Some(true), Some("cancelling")));
    assert!(all[1].done_at.is_some());
    assert_eq!((all[2].ok, all[2].done_at), (None, None), "still queued");
    assert_eq!(store.pending_decisions("r").await.unwrap().len(), 1);
    assert_eq!(all[0].kind, DecisionKind::Retry);
}

async fn runs_insert_once_and_transition_only_from_expected_states(store: Store) {
    store.insert_run("0x01", "{}", RunState::Proposed).await.unwrap();
    let high = store
        .insert_run_with("0x03", "{}", RunState::Proposed, Stakes::High, Some("{}"))
        .await
        .unwrap();
    assert_eq!(store.run("0x03").await.unwrap().unwrap(), high);
    assert_eq!(store.run("0x01").await.unwrap().unwrap().stakes, "low");
    assert!(matches!(
        store.insert_run("0x01", "{}", RunState::Proposed).await,
        Err(StoreError::Duplicate(_))
    ));
    assert!(
        !store.transition("0x01", &[RunState::Running], RunState::Completed, None).await.unwrap()
    );
    assert!(
        store
            .transition("0x01", &[RunState::Proposed], RunState::Paused, Some("why"))
            .await
            .unwrap()
    );
    let run = store.run("0x01").await.unwrap().unwrap();
    assert_eq!(run.state, "paused");
    assert_eq!(run.reason.as_deref(), Some("why"));
    assert!(run.paused_at.is_some());
    assert!(store.run("0x02").await.unwrap().is_none());
}

async fn events_are_numbered_and_deduplicated(store: Store) {
    let body = serde_json::json!({"index": 0});
    let first = store.append_event("r", EventKind::SubtaskCreated, "a", &body).await.unwrap();
    assert_eq!(first.unwrap().seq, 1);
    assert!(
        store.append_event("r", EventKind::SubtaskCreated, "a", &body).await.unwrap().is_none()
    );
    let second =
        store.append_event("r", EventKind::SubtaskPaid, "b", &body).await.unwrap().unwrap();
    assert_eq!(second.seq, 2);
    let body: serde_json::Value = serde_json::from_str(&second.body).unwrap();
    assert_eq!(body["kind"], "subtask_paid");
    assert_eq!(body["seq"], 2);
    assert_eq!(store.events_after("r", 1).await.unwrap().len(), 1);
    assert_eq!(store.events_after("other", 0).await.unwrap().len(), 0);
}

async fn decisions_queue_in_order_until_finished(store: Store) {
    store.push_decision("r", Some(1), DecisionKind::Approve, None).await.unwrap();
    store.push_decision("r", None, DecisionKind::Cancel, Some("enough")).await.unwrap();
    let pending = store.pending_decisions("r").await.unwrap();
    assert_eq!(pending.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(), ["approve", "cancel"]);
    let applied =
        DecisionOutcome { outcome: "applied".into(), ok: true, error: None, revert: None };
    store.record_decision("r", pending[0].seq, &applied).await.unwrap();
    let pending = store.pending_decisions("r").await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].arg.as_deref(), Some("enough"));
}

async fn subtask_rows_upsert(store: Store) {
    let mut row = SubtaskRow {
        idx: 0,
        attempt: 0,
        executor: "0xaa".into(),
        phase: "waiting".into(),
        task_id: None,
        result_uri: None,
        output: None,
    };
    store.put_subtask("r", &row).await.unwrap();
    row.phase = "paid".into();
    row.output = Some("text".into());
    store.put_subtask("r", &row).await.unwrap();
    assert_eq!(store.subtasks("r").await.unwrap(), vec![row]);
}
