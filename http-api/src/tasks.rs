//! The long-lived tasks of a service, under one supervisor: each started
//! critical ([`Tasks::spawn_critical`]: the service cannot do its job
//! without it) or optional ([`Tasks::spawn_optional`]), all under one root
//! [`CancellationToken`].
//!
//! A critical task that ends, whether it returned `Ok`, an error or
//! panicked, while the root is not cancelled is a failure of the process:
//! its [`Health`] turns not ready at once (`/readyz` answers 503 naming the
//! task), the error is logged with the task's name, the root is cancelled
//! so every other task stops, and [`Tasks::watch`] returns the failure,
//! which the service's command turns into a non-zero exit once the others
//! have drained ([`Tasks::drain`], bounded by [`SHUTDOWN_GRACE`]). A
//! supervisor restarts it. A shutdown signal cancels the same root, and
//! the process exits 0.
//!
//! An optional task that ends is logged and forgotten.
//!
//! Debug builds only, for the tests that kill each critical task in turn:
//! `TESSERA_TEST_FAULT=<task>:<panic|end>[@<ms>]` makes the task of that
//! name panic, or end as if its work were done, `ms` milliseconds (200 by
//! default) after it is spawned. Release builds ignore the variable.

use std::{collections::HashMap, fmt::Display, future::Future, sync::Arc, time::Duration};

use tokio::task::{Id, JoinSet};
pub use tokio_util::sync::CancellationToken;

/// How long the tasks get to end once the root is cancelled, before those
/// left are aborted.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A critical task ended while the service was running.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("critical task {task} {how}")]
pub struct TaskFailed {
    /// The task's name.
    pub task: &'static str,
    /// How it ended: `ended`, `failed: <error>` or `panicked: <message>`.
    pub how: String,
}

/// What a task's future gives back: nothing, or a result whose error is
/// reported.
pub trait TaskOutput {
    /// `Err` with the error's text when the task failed.
    fn into_result(self) -> Result<(), String>;
}

impl TaskOutput for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Display> TaskOutput for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// Whether every critical task of a service still runs: what its `/readyz`
/// reports as the check `tasks`.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<std::sync::Mutex<Option<String>>>);

impl Health {
    /// `Err` naming why the service is not ready: a critical task ended,
    /// or it is shutting down.
    pub fn status(&self) -> Result<(), String> {
        match &*self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            None => Ok(()),
            Some(why) => Err(why.clone()),
        }
    }

    /// A readiness check over it, for [`crate::ops::Ops::ready_when`].
    pub fn check(
        &self,
    ) -> impl Fn() -> std::future::Ready<Result<(), String>> + Send + Sync + 'static {
        let health = self.clone();
        move || std::future::ready(health.status())
    }

    /// Marks the service not ready; the first reason given stays.
    fn fail(&self, why: String) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(why);
    }
}

/// How a task ended.
#[derive(Debug)]
struct Ended {
    name: &'static str,
    critical: bool,
    outcome: Result<(), String>,
}

/// A service's long-lived tasks and their root cancellation.
#[derive(Debug, Default)]
pub struct Tasks {
    root: CancellationToken,
    set: JoinSet<Ended>,
    names: HashMap<Id, (&'static str, bool)>,
    health: Health,
}

impl Tasks {
    /// No tasks yet, a root not cancelled, ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// The root cancellation: every task stops when it is cancelled.
    pub fn root(&self) -> &CancellationToken {
        &self.root
    }

    /// The service's readiness as its tasks make it.
    pub fn health(&self) -> Health {
        self.health.clone()
    }

    /// Starts `task` as critical: its end, while the root is not
    /// cancelled, fails the process.
    pub fn spawn_critical<F>(&mut self, name: &'static str, task: F)
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput,
    {
        self.spawn(name, true, task);
    }

    /// Starts `task` as optional: its end is logged.
    pub fn spawn_optional<F>(&mut self, name: &'static str, task: F)
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput,
    {
        self.spawn(name, false, task);
    }

    fn spawn<F>(&mut self, name: &'static str, critical: bool, task: F)
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput,
    {
        let task = fault::inject(name, task);
        let handle = self
            .set
            .spawn(async move { Ended { name, critical, outcome: task.await.into_result() } });
        self.names.insert(handle.id(), (name, critical));
    }

    /// Waits until `shutdown` resolves or the root is cancelled (`Ok`), or
    /// a critical task ends (`Err` naming it). Either way the service is
    /// no longer ready and the root is cancelled when it returns; then
    /// [`Tasks::drain`] the rest.
    pub async fn watch(&mut self, shutdown: impl Future<Output = ()>) -> Result<(), TaskFailed> {
        tokio::pin!(shutdown);
        let outcome = loop {
            tokio::select! {
                () = &mut shutdown => break Ok(()),
                () = self.root.cancelled() => break Ok(()),
                Some(joined) = self.set.join_next_with_id(), if !self.set.is_empty() => {
                    if let Some(failed) = self.ended(joined) {
                        break Err(failed);
                    }
                }
            }
        };
        match &outcome {
            Ok(()) => self.health.fail("shutting down".to_owned()),
            Err(failed) => {
                self.health.fail(failed.to_string());
                tracing::error!(task = failed.task, "{failed}; stopping the service");
            }
        }
        self.root.cancel();
        outcome
    }

    /// A task ended: logged; the failure when it was critical.
    fn ended(&mut self, joined: Result<(Id, Ended), tokio::task::JoinError>) -> Option<TaskFailed> {
        let (name, critical, outcome) = match joined {
            Ok((id, ended)) => {
                self.names.remove(&id);
                (ended.name, ended.critical, ended.outcome.map_err(|e| format!("failed: {e}")))
            }
            Err(e) => {
                let (name, critical) = self.names.remove(&e.id()).unwrap_or(("unknown", true));
                let how = match e.try_into_panic() {
                    Ok(payload) => format!("panicked: {}", panic_message(payload.as_ref())),
                    Err(e) => format!("was aborted: {e}"),
                };
                (name, critical, Err(how))
            }
        };
        let how = outcome.err().unwrap_or_else(|| "ended".to_owned());
        if critical {
            return Some(TaskFailed { task: name, how });
        }
        tracing::warn!(task = name, "optional task {how}");
        None
    }

    /// Cancels the root and waits for every task to end, at most `grace`;
    /// those left are aborted. The names of the tasks that failed or had
    /// to be aborted, each logged.
    pub async fn drain(&mut self, grace: Duration) -> Vec<&'static str> {
        self.root.cancel();
        let mut bad = Vec::new();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            match tokio::time::timeout_at(deadline, self.set.join_next_with_id()).await {
                Ok(None) => break,
                Ok(Some(Ok((id, ended)))) => {
                    self.names.remove(&id);
                    if let Err(e) = ended.outcome {
                        tracing::warn!(task = ended.name, "task failed while stopping: {e}");
                        bad.push(ended.name);
                    }
                }
                Ok(Some(Err(e))) => {
                    let (name, _) = self.names.remove(&e.id()).unwrap_or(("unknown", true));
                    tracing::warn!(task = name, "task ended abnormally while stopping: {e}");
                    bad.push(name);
                }
                Err(_) => {
                    let mut left: Vec<_> = self.names.drain().map(|(_, (n, _))| n).collect();
                    left.sort_unstable();
                    tracing::warn!(
                        tasks = ?left,
                        "still running {} ms after the stop; aborted",
                        grace.as_millis()
                    );
                    self.set.abort_all();
                    bad.extend(left);
                    break;
                }
            }
        }
        bad
    }
}

/// A panic's message, when it has one.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// `TESSERA_TEST_FAULT`, read in debug builds only.
mod fault {
    use std::{future::Future, time::Duration};

    use super::TaskOutput;

    /// The variable naming the task to fail.
    pub(super) const VAR: &str = "TESSERA_TEST_FAULT";

    /// How the named task is made to end.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Kind {
        Panic,
        End,
    }

    /// `<task>:<panic|end>[@<ms>]`, when it names `name`.
    pub(super) fn parse(spec: &str, name: &str) -> Option<(Kind, Duration)> {
        let (task, rest) = spec.trim().split_once(':')?;
        if task != name {
            return None;
        }
        let (kind, ms) = rest.split_once('@').unwrap_or((rest, "200"));
        let kind = match kind {
            "panic" => Kind::Panic,
            "end" => Kind::End,
            _ => return None,
        };
        Some((kind, Duration::from_millis(ms.parse().ok()?)))
    }

    /// `task`, made to panic or end on cue when the variable names it (in
    /// a debug build).
    pub(super) fn inject<F>(
        name: &'static str,
        task: F,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: TaskOutput,
    {
        let fault = if cfg!(debug_assertions) {
            std::env::var(VAR).ok().and_then(|spec| parse(&spec, name))
        } else {
            None
        };
        async move {
            let Some((kind, after)) = fault else {
                return task.await.into_result();
            };
            tokio::select! {
                out = task => out.into_result(),
                () = tokio::time::sleep(after) => match kind {
                    Kind::Panic => panic!("{VAR} made task {name} panic"),
                    Kind::End => Ok(()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::{body::Body, http::StatusCode};
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;

    async fn readyz(app: &axum::Router) -> (StatusCode, Value) {
        let req = axum::http::Request::get("/readyz").body(Body::empty()).unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// A task that runs until the root is cancelled.
    fn until(root: &CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        root.clone().cancelled_owned()
    }

    #[tokio::test]
    async fn a_critical_task_that_ends_or_fails_or_panics_takes_readiness_down_by_name() {
        type Task =
            Box<dyn FnOnce() -> futures_util::future::BoxFuture<'static, Result<(), String>>>;
        let cases: Vec<(&str, Task)> = vec![
            ("ended", Box::new(|| Box::pin(async { Ok(()) }))),
            (
                "failed: connection lost",
                Box::new(|| Box::pin(async { Err("connection lost".into()) })),
            ),
            ("panicked: boom", Box::new(|| Box::pin(async { panic!("boom") }))),
        ];
        for (how, task) in cases {
            let mut tasks = Tasks::new();
            let app = crate::ops::Ops::new()
                .ready_when("tasks", tasks.health().check())
                .router(Duration::from_secs(5));
            let root = tasks.root().clone();
            tasks.spawn_critical("api", until(&root));
            tasks.spawn_optional("gauges", async { Err::<(), _>("gone") });
            let (status, _) = readyz(&app).await;
            assert_eq!(status, StatusCode::OK, "{how}");
            tasks.spawn_critical("heads", task());
            let failed = tasks.watch(std::future::pending()).await.unwrap_err();
            assert_eq!(failed, TaskFailed { task: "heads", how: how.to_owned() });
            assert!(root.is_cancelled());
            let (status, body) = readyz(&app).await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(body["checks"]["tasks"], format!("critical task heads {how}"));
            // The others saw the root go and ended.
            assert!(tasks.drain(Duration::from_secs(1)).await.is_empty());
        }
    }

    #[tokio::test]
    async fn a_shutdown_stops_every_task_and_aborts_those_past_the_grace() {
        let mut tasks = Tasks::new();
        let root = tasks.root().clone();
        tasks.spawn_critical("api", until(&root));
        tasks.spawn_critical("stubborn", std::future::pending::<()>());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tx.send(()).unwrap();
        tasks
            .watch(async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        assert_eq!(tasks.health().status(), Err("shutting down".to_owned()));
        let started = std::time::Instant::now();
        assert_eq!(tasks.drain(Duration::from_millis(200)).await, vec!["stubborn"]);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn faults_name_a_task_a_kind_and_a_delay() {
        use fault::{Kind, parse};
        assert_eq!(parse("heads:panic", "heads"), Some((Kind::Panic, Duration::from_millis(200))));
        assert_eq!(
            parse("heads:end@1500", "heads"),
            Some((Kind::End, Duration::from_secs_f64(1.5)))
        );
        assert_eq!(parse("heads:panic", "api"), None);
        assert_eq!(parse("heads:explode", "heads"), None);
        assert_eq!(parse("heads", "heads"), None);
    }
}
