//! The run store on SQLite, and on PostgreSQL when a server answers.

use super::*;
use crate::state::{CloseReason, DecisionKind, EventKind, PauseReason, Reason, RunState, Stakes};

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
    runs_belong_to_a_sponsor_lane,
    sign_in_nonces_sessions_and_sponsor_spend,
    sponsor_cap_holds_under_concurrent_approvals,
    run_lists_per_owner,
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
    let why = Reason::Pause(PauseReason("why".into()));
    assert!(
        store
            .transition("0x01", &[RunState::Proposed], RunState::Paused, Some(&why))
            .await
            .unwrap()
    );
    let run = store.run("0x01").await.unwrap().unwrap();
    assert_eq!(run.state, "paused");
    assert_eq!(run.reason.as_deref(), Some("why"));
    assert_eq!((run.pause_reason.as_deref(), run.close_reason.as_deref()), (Some("why"), None));
    assert!(run.paused_at.is_some());
    let closed = Reason::Close(CloseReason::CheckpointRejected("review".into()));
    assert!(
        store
            .transition("0x01", &[RunState::Paused], RunState::Cancelling, Some(&closed))
            .await
            .unwrap()
    );
    let run = store.run("0x01").await.unwrap().unwrap();
    assert_eq!(run.reason.as_deref(), Some("checkpoint review rejected"));
    assert_eq!(
        (run.pause_reason.as_deref(), run.close_reason.as_deref()),
        (None, Some("checkpoint review rejected"))
    );
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
    assert!(store.has_event("r", "a").await.unwrap() && !store.has_event("r", "c").await.unwrap());
    assert!(!store.has_event("other", "a").await.unwrap(), "keys are per run");
    let paid = store.events_of_kind("r", EventKind::SubtaskPaid).await.unwrap();
    assert_eq!(paid.len(), 1);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&paid[0]).unwrap()["seq"], 2);
    assert!(store.events_of_kind("r", EventKind::SubtaskDeclined).await.unwrap().is_empty());
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

async fn runs_belong_to_a_sponsor_lane(store: Store) {
    store.insert_run("0x01", "{}", RunState::Running).await.unwrap();
    store
        .insert_run_for("0x02", "{}", RunState::Paused, Stakes::Low, None, Some("0xbb"))
        .await
        .unwrap();
    store
        .insert_run_for("0x03", "{}", RunState::Completed, Stakes::Low, None, Some("0xaa"))
        .await
        .unwrap();
    assert_eq!(store.run_sponsor("0x01").await.unwrap(), None, "from before lanes");
    assert_eq!(store.live_runs_of("0xaa").await.unwrap(), Vec::new());
    assert_eq!(store.adopt_runs("0xaa").await.unwrap(), 1, "only the one without a sponsor");
    assert_eq!(store.run_sponsor("0x01").await.unwrap().as_deref(), Some("0xaa"));
    let live = |id: &str, state: &str| (id.to_owned(), state.to_owned());
    assert_eq!(store.live_runs_of("0xaa").await.unwrap(), [live("0x01", "running")], "live only");
    assert_eq!(store.live_runs_of("0xbb").await.unwrap(), [live("0x02", "paused")]);
    assert_eq!(store.adopt_runs("0xcc").await.unwrap(), 0);
}

#[tokio::test]
async fn leases_need_postgres() {
    let (_dir, store) = sqlite().await;
    let err = store.claim_lease("0xaa", "a", 1_000).await.unwrap_err();
    assert!(matches!(err, StoreError::NeedsPostgres(_)), "{err}");
    assert!(store.renew_lease("0xaa", "a", 1_000).await.is_err());
}

#[tokio::test]
async fn a_lease_is_held_by_one_replica_renewed_taken_over_once_lapsed_and_released() {
    let Some(store) = scratch_postgres("lane_leases").await else { return };
    let lane = "0xaa";
    let held = |epoch, took_over| Claim::Held { epoch, took_over };
    assert_eq!(store.claim_lease(lane, "a", 60_000).await.unwrap(), held(1, false));
    assert_eq!(store.claim_lease(lane, "b", 60_000).await.unwrap(), Claim::Taken);
    assert_eq!(store.claim_lease(lane, "a", 60_000).await.unwrap(), held(1, false), "renewed");
    assert!(store.renew_lease(lane, "a", 60_000).await.unwrap());
    assert!(!store.renew_lease(lane, "b", 60_000).await.unwrap(), "not b's");
    let lease = store.lease(lane).await.unwrap().unwrap();
    assert_eq!((lease.owner.as_deref(), lease.epoch), (Some("a"), 1));
    assert!(lease.expires_at > lease.heartbeat_at);

    // a stops renewing: once its lease lapsed, b takes it over, a cannot renew.
    assert!(store.renew_lease(lane, "a", 150).await.unwrap());
    assert_eq!(store.claim_lease(lane, "b", 60_000).await.unwrap(), Claim::Taken, "not yet");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!store.renew_lease(lane, "a", 60_000).await.unwrap(), "a lapsed lease is lost");
    assert_eq!(store.claim_lease(lane, "b", 60_000).await.unwrap(), held(2, true));
    assert!(!store.renew_lease(lane, "a", 60_000).await.unwrap());

    // Released, it is free at once; only its owner releases it.
    assert!(!store.release_lease(lane, "a").await.unwrap());
    assert!(store.release_lease(lane, "b").await.unwrap());
    assert_eq!(store.claim_lease(lane, "a", 60_000).await.unwrap(), held(3, false));
    // Lanes are apart.
    assert_eq!(store.claim_lease("0xbb", "b", 60_000).await.unwrap(), held(1, false));
}

#[tokio::test]
async fn a_claim_skips_a_lease_another_replica_is_claiming() {
    let Some(store) = scratch_postgres("lane_skip_locked").await else { return };
    assert!(matches!(store.claim_lease("0xaa", "a", 1).await.unwrap(), Claim::Held { .. }));
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // Another replica holds the row locked (mid-claim): skipped, not waited for.
    let mut tx = store.pool.begin().await.unwrap();
    sqlx::query("SELECT owner FROM leases WHERE lane = $1 FOR UPDATE")
        .bind("0xaa")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let claim = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        store.claim_lease("0xaa", "b", 60_000),
    )
    .await
    .expect("a locked lease is skipped at once");
    assert_eq!(claim.unwrap(), Claim::Taken);
    tx.rollback().await.unwrap();
    assert_eq!(
        store.claim_lease("0xaa", "b", 60_000).await.unwrap(),
        Claim::Held { epoch: 2, took_over: true }
    );
}

#[tokio::test]
async fn a_publishing_store_announces_events_and_wake_ups() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("lane_notify").await else {
        return;
    };
    let quiet = Store::connect(&url).await.unwrap();
    let store = quiet.clone().publishing("r1");
    let mut listener = sqlx::postgres::PgListener::connect(&url).await.unwrap();
    listener.listen_all([WAKE_CHANNEL, EVENTS_CHANNEL]).await.unwrap();
    let body = serde_json::json!({"index": 0});
    // Not in replica mode: nothing announced.
    quiet.append_event("0x01", EventKind::SubtaskCreated, "a", &body).await.unwrap();
    quiet.notify_wake("0x01").await.unwrap();
    store.append_event("0x01", EventKind::SubtaskPaid, "b", &body).await.unwrap();
    store.notify_wake("0x01").await.unwrap();
    let mut heard = Vec::new();
    for _ in 0..2 {
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), listener.recv())
            .await
            .expect("a notification")
            .unwrap();
        heard.push((n.channel().to_owned(), n.payload().to_owned()));
    }
    let own = |c: &str, p: &str| (c.to_owned(), p.to_owned());
    assert_eq!(heard, [own(EVENTS_CHANNEL, "0x01:2:r1"), own(WAKE_CHANNEL, "0x01")]);
    assert_eq!(parse_event_payload(&heard[0].1), Some(("0x01", 2, "r1")));
    let ev = store.event("0x01", 2).await.unwrap().unwrap();
    assert_eq!(ev.kind, "subtask_paid");
    assert!(store.event("0x01", 9).await.unwrap().is_none());
}

/// Two stores on one database (two replicas, or a replica and its API),
/// each pushing decisions and appending events for one run at once: every
/// row gets its own number, none is refused or lost.
async fn concurrent_writers_number_without_collisions(url: &str) {
    const EACH: i64 = 40;
    let (one, two) = (Store::connect(url).await.unwrap(), Store::connect(url).await.unwrap());
    let write = |store: Store, side: &'static str| async move {
        let mut handles = Vec::new();
        for i in 0..EACH {
            let store = store.clone();
            let body = serde_json::json!({});
            handles.push(tokio::spawn(async move {
                let seq = store.push_decision("r", Some(0), DecisionKind::Approve, None).await?;
                let dedup = format!("{side}:{i}");
                let event = store.append_event("r", EventKind::SubtaskPaid, &dedup, &body).await?;
                Ok::<_, StoreError>((seq, event.map(|e| e.seq)))
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap().unwrap_or_else(|e| panic!("a {side} write failed: {e}")));
        }
        out
    };
    let (a, b) = tokio::join!(write(one.clone(), "one"), write(two.clone(), "two"));
    let all: Vec<(i64, Option<i64>)> = a.into_iter().chain(b).collect();
    let mut decisions: Vec<i64> = all.iter().map(|(d, _)| *d).collect();
    let mut events: Vec<i64> = all.iter().map(|(_, e)| e.expect("every event is new")).collect();
    decisions.sort_unstable();
    events.sort_unstable();
    let expected: Vec<i64> = (1..=2 * EACH).collect();
    assert_eq!(decisions, expected, "every decision numbered once, in one sequence");
    assert_eq!(events, expected, "every event numbered once, in one sequence");
    assert_eq!(one.events_after("r", 0).await.unwrap().len() as i64, 2 * EACH);
    assert_eq!(two.decisions("r").await.unwrap().len() as i64, 2 * EACH);
}

#[tokio::test]
async fn concurrent_writers_number_without_collisions_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    concurrent_writers_number_without_collisions(&url).await;
}

#[tokio::test]
async fn concurrent_writers_number_without_collisions_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("concurrent_seq").await else {
        return;
    };
    concurrent_writers_number_without_collisions(&url).await;
}

/// The store's migrations, in order.
const MIGRATIONS: [&str; 13] = [
    include_str!("../../migrations/0001_runs.sql"),
    include_str!("../../migrations/0002_stakes.sql"),
    include_str!("../../migrations/0003_decision_outcomes.sql"),
    include_str!("../../migrations/0004_run_from_block.sql"),
    include_str!("../../migrations/0005_spend.sql"),
    include_str!("../../migrations/0006_gates.sql"),
    include_str!("../../migrations/0007_leases.sql"),
    include_str!("../../migrations/0008_chain_time.sql"),
    include_str!("../../migrations/0009_feedback.sql"),
    include_str!("../../migrations/0010_run_reasons.sql"),
    include_str!("../../migrations/0011_sponsors.sql"),
    include_str!("../../migrations/0012_sessions.sql"),
    include_str!("../../migrations/0013_decision_ok.sql"),
];

/// A pool on `url` with the first `n` migrations applied, as an older
/// version left it.
async fn migrated_to(url: &str, n: usize) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(url).await.unwrap();
    for sql in &MIGRATIONS[..n] {
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    }
    pool
}

/// Migration 0010 on a database migrated to 0009 with rows in every state:
/// a paused run's reason becomes its pause reason, a closing or closed
/// run's its close reason, and the old column goes.
async fn reasons_split_from_old_rows(url: &str) {
    let pool = migrated_to(url, 9).await;
    let rows = [
        ("0x01", "paused", Some("sub-task 0 attempt 0: expired; retry or cancel")),
        ("0x02", "cancelling", Some("cancelled")),
        ("0x03", "failed", Some("checkpoint review rejected")),
        ("0x04", "cancelled", Some("cancelled")),
        ("0x05", "running", None),
    ];
    for (id, state, reason) in rows {
        sqlx::query(
            "INSERT INTO runs (id, plan_json, state, reason, created_at, updated_at) \
             VALUES ($1, '{}', $2, $3, 1, 1)",
        )
        .bind(id)
        .bind(state)
        .bind(reason)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::raw_sql(MIGRATIONS[9]).execute(&pool).await.unwrap();
    let got: Vec<(String, Option<String>, Option<String>)> =
        sqlx::query_as("SELECT id, pause_reason, close_reason FROM runs ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    let owned = |s: &str| Some(s.to_owned());
    assert_eq!(
        got,
        [
            ("0x01".into(), owned("sub-task 0 attempt 0: expired; retry or cancel"), None),
            ("0x02".into(), None, owned("cancelled")),
            ("0x03".into(), None, owned("checkpoint review rejected")),
            ("0x04".into(), None, owned("cancelled")),
            ("0x05".into(), None, None),
        ]
    );
    for (_, _, close) in &got {
        if let Some(close) = close {
            assert!(CloseReason::parse(close).is_ok(), "{close}");
        }
    }
    assert!(sqlx::query("SELECT reason FROM runs").fetch_all(&pool).await.is_err());
}

/// Migration 0013 on a database migrated to 0012 with decisions from
/// before `ok` existed: a `failed: …` outcome is a failure, any other a
/// success, and one not done yet has neither; a row with `ok` keeps it.
async fn old_decisions_get_their_ok(url: &str) {
    let pool = migrated_to(url, 12).await;
    let rows: [(i64, Option<&str>, Option<i64>); 4] = [
        (1, Some("failed: TaskEscrowTooEarly"), None),
        (2, Some("approved"), None),
        (3, None, None),
        (4, Some("failed: kept as it was written"), Some(1)),
    ];
    for (seq, outcome, ok) in rows {
        sqlx::query(
            "INSERT INTO decisions (run_id, seq, kind, created_at, outcome, ok) \
             VALUES ('0x01', $1, 'retry', 1, $2, $3)",
        )
        .bind(seq)
        .bind(outcome)
        .bind(ok)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::raw_sql(MIGRATIONS[12]).execute(&pool).await.unwrap();
    let got: Vec<(i64, Option<i64>)> = sqlx::query_as("SELECT seq, ok FROM decisions ORDER BY seq")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(got, [(1, Some(0)), (2, Some(1)), (3, None), (4, Some(1))]);
}

#[tokio::test]
async fn old_decisions_get_their_ok_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    old_decisions_get_their_ok(&url).await;
}

#[tokio::test]
async fn old_decisions_get_their_ok_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("decision_ok").await else {
        return;
    };
    old_decisions_get_their_ok(&url).await;
}

#[tokio::test]
async fn reasons_split_from_old_rows_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    reasons_split_from_old_rows(&url).await;
}

#[tokio::test]
async fn reasons_split_from_old_rows_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("reasons_split").await else {
        return;
    };
    reasons_split_from_old_rows(&url).await;
}

async fn sign_in_nonces_sessions_and_sponsor_spend(store: Store) {
    let now = 1_800_000_000;
    store.put_login_nonce("nonceA1234", now + 300, now).await.unwrap();
    store.put_login_nonce("nonceOld123", now + 10, now).await.unwrap();
    assert!(!store.take_login_nonce("neverIssued", now).await.unwrap(), "not issued");
    assert!(store.take_login_nonce("nonceA1234", now + 1).await.unwrap());
    assert!(!store.take_login_nonce("nonceA1234", now + 2).await.unwrap(), "used once");
    assert!(!store.take_login_nonce("nonceOld123", now + 10).await.unwrap(), "expired");

    store.put_session("0xhash1", "0xaa", now + 3600, now).await.unwrap();
    assert_eq!(store.session("0xhash1", now).await.unwrap().as_deref(), Some("0xaa"));
    assert_eq!(store.session("0xhash2", now).await.unwrap(), None);
    assert_eq!(store.session("0xhash1", now + 3600).await.unwrap(), None, "expired");
    store.put_session("0xhash3", "0xbb", now + 3600, now).await.unwrap();
    store.end_session("0xhash3").await.unwrap();
    assert_eq!(store.session("0xhash3", now).await.unwrap(), None, "logged out");
    // Expired nonces and sessions are swept when a nonce is handed out.
    store.put_login_nonce("nonceB1234", now + 4000, now + 3700).await.unwrap();
    assert_eq!(store.session("0xhash1", 0).await.unwrap(), None, "swept");

    let cap = u128::MAX;
    let reserve = |id: &'static str, who: &'static str, budget: u128, at: u64| {
        let store = store.clone();
        async move { store.reserve_sponsor_spend(id, who, budget, at, 0, cap).await.unwrap() }
    };
    assert_eq!(reserve("0x01", "0xaa", 5_000_000, now).await, None);
    assert_eq!(reserve("0x02", "0xaa", 7_000_000, now + 10).await, None);
    assert_eq!(reserve("0x03", "0xbb", 1_000_000, now + 10).await, None);
    assert_eq!(store.sponsor_spend_since("0xaa", now - 1).await.unwrap(), 12_000_000);
    assert_eq!(store.sponsor_spend_since("0xaa", now).await.unwrap(), 7_000_000);
    assert_eq!(reserve("0x02", "0xaa", 2_000_000, now + 20).await, None, "replaces");
    assert_eq!(store.sponsor_spend_since("0xaa", now - 1).await.unwrap(), 7_000_000);
    store.drop_sponsor_approval("0x01").await.unwrap();
    assert_eq!(store.sponsor_spend_since("0xaa", now - 1).await.unwrap(), 2_000_000);
    assert_eq!(store.sponsor_spend_since("0xcc", 0).await.unwrap(), 0);

    // Over the cap: refused with what was approved in the window, nothing
    // recorded; approvals before the window do not count.
    let r = store.reserve_sponsor_spend("0x04", "0xaa", 9_000_000, now + 30, now, 10_000_000);
    assert_eq!(r.await.unwrap(), Some(2_000_000));
    assert_eq!(store.sponsor_spend_since("0xaa", now - 1).await.unwrap(), 2_000_000);
    let r = store.reserve_sponsor_spend("0x04", "0xaa", 8_000_000, now + 30, now, 10_000_000);
    assert_eq!(r.await.unwrap(), None, "exactly the cap");
    let r = store.reserve_sponsor_spend("0x05", "0xaa", 1, now + 30, now + 25, 8_000_000);
    assert_eq!(r.await.unwrap(), Some(8_000_000), "the window starts after 0x02");
}

/// Twenty approvals of one sponsor at once against a cap that takes seven:
/// exactly seven are recorded, whichever they are.
async fn sponsor_cap_holds_under_concurrent_approvals(store: Store) {
    let now = 1_800_000_000;
    let mut tasks = Vec::new();
    for i in 0..20u32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("0x{i:02x}");
            store.reserve_sponsor_spend(&id, "0xdd", 3, now, 0, 21).await.unwrap()
        }));
    }
    let mut recorded = 0;
    for t in tasks {
        match t.await.unwrap() {
            None => recorded += 1,
            Some(approved) => assert!(approved + 3 > 21, "refused under the cap: {approved}"),
        }
    }
    assert_eq!(recorded, 7);
    assert_eq!(store.sponsor_spend_since("0xdd", 0).await.unwrap(), 21);
}

async fn run_lists_per_owner(store: Store) {
    for (id, state) in
        [("0x01", RunState::Running), ("0x02", RunState::Proposed), ("0x03", RunState::Running)]
    {
        store.insert_run(id, "{}", state).await.unwrap();
    }
    store.set_owner("0x01", "0xaa").await.unwrap();
    store.set_owner("0x02", "0xaa").await.unwrap();
    store.set_owner("0x03", "0xbb").await.unwrap();
    let ids = |l: Vec<RunSummary>| {
        let mut v: Vec<String> = l.into_iter().map(|r| r.id).collect();
        v.sort();
        v
    };
    assert_eq!(ids(store.run_list_of(Some("0xaa"), None, 10).await.unwrap()), ["0x01", "0x02"]);
    assert_eq!(
        ids(store.run_list_of(Some("0xaa"), Some(RunState::Running), 10).await.unwrap()),
        ["0x01"]
    );
    assert_eq!(
        ids(store.run_list_of(None, Some(RunState::Running), 10).await.unwrap()),
        ["0x01", "0x03"]
    );
    assert_eq!(store.run_list_of(Some("0xaa"), None, 1).await.unwrap().len(), 1);
    assert!(store.run_list_of(Some("0xcc"), None, 10).await.unwrap().is_empty());
}
