//! The orchestrator service, wired once: the runner over its store and
//! chain, every live run resumed, the head follower, and the HTTP API (with
//! any routers nested beside it, such as the embedded indexer's), all under
//! one shutdown. Its long-lived tasks are critical ones of a [`Tasks`]
//! group (`api`, `heads`, `feedback`, and in replica mode `lease` and
//! `notifications`), to which the command adds its own:
//! when one ends, `/readyz` turns 503 naming it and [`Tasks::watch`]
//! returns it. `tessera serve` and the end-to-end test stack both start
//! it through [`Service::start`]; `tessera serve --replica` through
//! [`Service::start_replica`] (see [`crate::replica`]).

use std::{net::SocketAddr, sync::Arc};

use axum::Router;
use tessera_bindings::{
    catalogue::CatalogueSource,
    envelope::{BlobSources, BlobStore},
};
use tessera_classifier::Classifier;
use tessera_http::{limits::StreamGate, tasks::Tasks};

use crate::{
    api,
    choose::AgentRecords,
    replica::{Lane, Replica, ReplicaConfig, ReplicaError},
    runner::{Chain, Orchestrator, RunError, RunnerConfig},
    store::Store,
};

/// What the service is made of.
pub struct ServiceConfig {
    /// The run store.
    pub store: Store,
    /// The sponsor's chain handle.
    pub chain: Chain,
    /// Where envelopes and results live.
    pub blobs: Arc<dyn BlobStore + Send + Sync>,
    /// How blobs are read from elsewhere (hints, gateways) and published
    /// (the public URL of the hint), over its own local store, which then
    /// replaces `blobs`; `None`: `blobs`, following hints, publishing
    /// without one.
    pub blob_sources: Option<BlobSources>,
    /// How the runner behaves.
    pub runner: RunnerConfig,
    /// Websocket URL for new blocks (polling without it).
    pub ws_url: Option<String>,
    /// Where the API listens (bound by the caller, e.g. at port 0).
    pub listener: tokio::net::TcpListener,
    /// Bearer token of the state-changing endpoints (in operator mode, the
    /// operator's admin token; empty: none).
    pub token: String,
    /// Operator mode: sponsors sign in and fund each plan with a grant;
    /// `None`: single-key mode (the chain's key is the one sponsor).
    pub operator: Option<api::OperatorAccess>,
    /// Brief classifier.
    pub classifier: Classifier,
    /// Request time limit and open-stream cap.
    pub gate: StreamGate,
    /// Routers served under a path prefix beside the API.
    pub nested: Vec<(String, Router)>,
    /// Where agents' records are read when executors are chosen (see
    /// [`Orchestrator::with_records`]), in place before any run resumes.
    pub records: Option<Arc<dyn AgentRecords>>,
    /// Where the capability catalogue is read (see
    /// [`Orchestrator::with_catalogue`]), in place before any run resumes.
    pub catalogue: Option<Arc<dyn CatalogueSource>>,
}

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("chain", &self.chain)
            .field("ws_url", &self.ws_url)
            .field("listener", &self.listener)
            .field("records", &self.records.is_some())
            .field("catalogue", &self.catalogue.is_some())
            .finish_non_exhaustive()
    }
}

/// Why the service failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Resuming the live runs failed.
    #[error("resuming runs: {0}")]
    Resume(#[source] RunError),
    /// The listener failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
    /// Tasks failed or did not stop within the grace.
    #[error("tasks that did not stop cleanly: {}", .0.join(", "))]
    Unclean(Vec<&'static str>),
    /// Replica mode could not start.
    #[error("replica mode: {0}")]
    Replica(#[source] ReplicaError),
}

/// A running orchestrator service.
#[derive(Debug)]
pub struct Service {
    orch: Arc<Orchestrator>,
    addr: SocketAddr,
    resumed: usize,
    /// The server (`api`), the head follower (`heads`) and the feedback
    /// writer (`feedback`, [`crate::feedback`]), with whatever the caller adds.
    tasks: Tasks,
    replica: Option<Replica>,
}

impl Service {
    /// Starts the runner (resuming every live run), the head follower and
    /// the API.
    pub async fn start(config: ServiceConfig) -> Result<Self, ServiceError> {
        Self::start_with(config, None).await
    }

    /// [`Service::start`] as one replica of the sponsor's lane: the lane's
    /// runs are resumed and driven only while this replica holds its lease
    /// (see [`crate::replica`]); the API answers either way.
    pub async fn start_replica(
        config: ServiceConfig,
        replica: ReplicaConfig,
    ) -> Result<Self, ServiceError> {
        replica.check().map_err(|e| ServiceError::Replica(ReplicaError::Config(e)))?;
        let lane = Arc::new(Lane::new(replica, config.chain.sponsor()));
        let store = config.store.clone().publishing(lane.id());
        Self::start_with(ServiceConfig { store, ..config }, Some(lane)).await
    }

    async fn start_with(
        config: ServiceConfig,
        lane: Option<Arc<Lane>>,
    ) -> Result<Self, ServiceError> {
        let sources = config.blob_sources.unwrap_or_else(|| BlobSources::new(config.blobs));
        let access = match config.operator {
            Some(mut operator) => {
                operator.admin_token = (!config.token.is_empty()).then_some(config.token);
                api::Access::Operator(operator)
            }
            None => api::Access::SingleKey { token: config.token },
        };
        let mut runner = config.runner;
        runner.grants_required |= matches!(access, api::Access::Operator(_));
        let feedback_mode = runner.feedback;
        let feedback_every = runner.idle_tick;
        let orch = Orchestrator::with_sources(config.store, config.chain, sources, runner);
        // Before any run resumes: its first step may choose an executor or
        // read the catalogue.
        if let Some(records) = config.records {
            orch.with_records(records);
        }
        if let Some(catalogue) = config.catalogue {
            orch.with_catalogue(catalogue);
        }
        let mut tasks = Tasks::new();
        let (resumed, replica) = match lane {
            None => (orch.resume_all().await.map_err(ServiceError::Resume)?, None),
            Some(lane) => {
                let replica =
                    Replica::start(&orch, lane, &mut tasks).await.map_err(ServiceError::Replica)?;
                (replica.resumed(), Some(replica))
            }
        };
        tasks.spawn_critical("heads", Arc::clone(&orch).follow_heads(config.ws_url));
        let addr = config.listener.local_addr()?;
        let gate = config.gate;
        let mut app = api::router(Arc::clone(&orch), access, config.classifier, gate.clone());
        for (path, router) in config.nested {
            app = app.nest(&path, router);
        }
        // /metrics, /healthz, /readyz: beside the API, not in its OpenAPI document.
        let mut ops = crate::ops::service_ops(&orch).ready_when("tasks", tasks.health().check());
        if let Some(replica) = &replica {
            ops = crate::ops::with_lease(ops, Arc::clone(replica.lane()));
        }
        app = app.merge(ops.router(gate.limits().request_timeout));
        // A 5xx is a warning here: a 503 past a limit is the server doing its
        // job, and an internal error is logged where it happened, with its cause.
        let app = app
            .layer(tower_http::trace::TraceLayer::new_for_http().on_failure(
                tower_http::trace::DefaultOnFailure::new().level(tracing::Level::WARN),
            ));
        let stop = tasks.root().clone();
        tasks.spawn_critical(
            "feedback",
            crate::feedback::feedback_loop(
                Arc::clone(&orch),
                feedback_mode,
                feedback_every,
                stop.clone(),
            ),
        );
        // Open event streams end with the server; it would wait for them otherwise.
        let shutdown = async move {
            stop.cancelled().await;
            gate.close();
        };
        tasks.spawn_critical(
            "api",
            axum::serve(config.listener, app).with_graceful_shutdown(shutdown).into_future(),
        );
        Ok(Self { orch, addr, resumed, tasks, replica })
    }

    /// The orchestrator.
    pub fn orchestrator(&self) -> &Arc<Orchestrator> {
        &self.orch
    }

    /// Where the API listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many live runs were resumed at start.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// Replica mode, when started so.
    pub fn replica(&self) -> Option<&Replica> {
        self.replica.as_ref()
    }

    /// The service's tasks: add the caller's own, then
    /// [`Tasks::watch`] them until a signal or the end of a critical one.
    pub fn tasks(&mut self) -> &mut Tasks {
        &mut self.tasks
    }

    /// Stops serving, drains the run drivers (each finishes its current
    /// step; bound the wait with a timeout: a driver cut short resumes at
    /// the next start, as after a crash), then every task within
    /// [`tessera_http::tasks::SHUTDOWN_GRACE`], and returns.
    pub async fn shutdown(&mut self) -> Result<(), ServiceError> {
        self.tasks.root().cancel();
        self.orch.shutdown().await;
        // The drivers are drained: the lease goes, a standby takes the lane.
        if let Some(replica) = self.replica.as_mut() {
            replica.shutdown().await;
        }
        let unclean = self.tasks.drain(tessera_http::tasks::SHUTDOWN_GRACE).await;
        if !unclean.is_empty() {
            return Err(ServiceError::Unclean(unclean));
        }
        Ok(())
    }
}

impl Drop for Service {
    /// Dropped without [`Service::shutdown`]: everything is told to stop.
    fn drop(&mut self) {
        self.tasks.root().cancel();
        self.orch.stop();
    }
}
