//! The orchestrator's HTTP API (axum): plans, runs, decisions, the SSE event
//! stream with replay, blobs, agents' ranking, the capability catalogue,
//! and the OpenAPI document.
//!
//! Every state-changing endpoint needs `Authorization: Bearer <token>`;
//! request bodies are capped; errors are JSON `{"error": …}` with a 4xx
//! status that says what to fix, while internal failures are logged and
//! answered with a bare 500. Rejections by the extractors and by routing
//! (unknown path, wrong method) keep that shape through `tessera_http`:
//! 400 for a bad path segment or query, 415 for a body not sent as JSON,
//! 413 over the body limit, 422 for a body that is not the documented JSON.

use std::sync::Arc;

use alloy::primitives::{Address, B256, Bytes};
use axum::{
    Extension, Json, Router,
    extract::{DefaultBodyLimit, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response, sse::Event},
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::json;
use tessera_http::{
    Json as Body, JsonBytes, Path, Query,
    limits::{self, StreamGate},
};

use tessera_bindings::{grant::SignedGrant, usdc::Usdc};
use tessera_classifier::Classifier;

use crate::{
    events::is_final,
    grants::PermitGiven,
    plan::{Plan, Selection},
    runner::{Decision, Edit, Orchestrator, RunError},
    state::RunState,
    store::{EventRow, GrantRow, MAX_RUN_LIST, StoreError},
};

/// Largest request body accepted (a plan with its source material).
pub const MAX_BODY_BYTES: usize = 512 * 1024;

/// The OpenAPI document served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Every route: method and path as written in the OpenAPI document.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/health"),
    ("get", "/api/openapi.json"),
    ("post", "/api/plans"),
    ("get", "/api/runs"),
    ("get", "/api/runs/{id}"),
    ("post", "/api/runs/{id}/approve"),
    ("post", "/api/runs/{id}/edit"),
    ("post", "/api/runs/{id}/cancel"),
    ("get", "/api/runs/{id}/events"),
    ("post", "/api/runs/{id}/subtasks/{index}/review"),
    ("post", "/api/runs/{id}/subtasks/{index}/retry"),
    ("post", "/api/runs/{id}/subtasks/{index}/executor"),
    ("get", "/api/blobs/{hash}"),
    ("post", "/api/classify"),
    ("post", "/api/runs/{id}/confirm"),
    ("post", "/api/runs/{id}/appeal"),
    ("post", "/api/runs/{id}/checkpoints/{name}"),
    ("get", "/api/agents/ranking"),
    ("get", "/api/capabilities"),
    ("get", "/api/auth/nonce"),
    ("post", "/api/auth/login"),
    ("post", "/api/auth/logout"),
    ("get", "/api/runs/{id}/grant"),
];

/// Who may do what: one token (single-key mode), or sponsors signed in
/// with Ethereum beside an optional admin token (operator mode).
#[derive(Debug, Clone)]
pub enum Access {
    /// Single-key mode, as before: serve's key is the one sponsor; the
    /// token guards state changes; reads are open.
    SingleKey {
        /// The bearer token.
        token: String,
    },
    /// Operator mode: many sponsors, each signed in (EIP-4361).
    Operator(OperatorAccess),
}

/// Operator mode's settings.
#[derive(Debug, Clone)]
pub struct OperatorAccess {
    /// The operator's own admin token (sees and decides every run).
    pub admin_token: Option<String>,
    /// The authority (`host[:port]`) sign-in messages must name; the
    /// request's Host header when none.
    pub public_origin: Option<String>,
    /// Most a sponsor may approve in grant budgets over a rolling 24 hours.
    pub max_sponsor_spend: Usdc,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Caller {
    /// The token holder: every run.
    Admin,
    /// A signed-in sponsor: its own runs, and its session's token hash.
    Sponsor(Address, String),
}

#[derive(Clone)]
struct AppState {
    orch: Arc<Orchestrator>,
    access: Arc<Access>,
    classifier: Arc<Classifier>,
    gate: StreamGate,
}

impl AppState {
    fn operator(&self) -> Option<&OperatorAccess> {
        match &*self.access {
            Access::Operator(o) => Some(o),
            Access::SingleKey { .. } => None,
        }
    }

    fn admin_token(&self) -> Option<&str> {
        match &*self.access {
            Access::SingleKey { token } => Some(token),
            Access::Operator(o) => o.admin_token.as_deref(),
        }
    }
}

/// Unix seconds now (wall clock: sign-in and sessions).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The API router over `orch`, guarding it as `access` says, classifying
/// briefs with `classifier`, and keeping the limits of `gate` (a time limit
/// on every request, a cap on open event streams).
pub fn router(
    orch: Arc<Orchestrator>,
    access: Access,
    classifier: Classifier,
    gate: StreamGate,
) -> Router {
    let timeout = gate.limits().request_timeout;
    let state = AppState { orch, access: Arc::new(access), classifier: Arc::new(classifier), gate };
    let guarded = Router::new()
        .route("/api/plans", post(create_plan))
        .route("/api/classify", post(classify))
        .route("/api/runs", get(list_runs))
        .route("/api/runs/{id}", get(show_run))
        .route("/api/runs/{id}/events", get(run_events))
        .route("/api/runs/{id}/grant", get(grant_request))
        .route("/api/runs/{id}/confirm", post(confirm))
        .route("/api/runs/{id}/appeal", post(appeal))
        .route("/api/runs/{id}/approve", post(approve))
        .route("/api/runs/{id}/edit", post(edit))
        .route("/api/runs/{id}/cancel", post(cancel))
        .route("/api/runs/{id}/checkpoints/{name}", post(checkpoint))
        .route("/api/runs/{id}/subtasks/{index}/review", post(review))
        .route("/api/runs/{id}/subtasks/{index}/retry", post(retry))
        .route("/api/runs/{id}/subtasks/{index}/executor", post(change_executor))
        .route("/api/auth/logout", post(logout))
        .route_layer(middleware::from_fn_with_state(state.clone(), identify));
    Router::new()
        .route("/api/health", get(health))
        .route("/api/openapi.json", get(openapi))
        .route("/api/blobs/{hash}", get(blob))
        .route("/api/agents/ranking", get(ranking))
        .route("/api/capabilities", get(capabilities))
        .route("/api/auth/nonce", get(login_nonce))
        .route("/api/auth/login", post(login))
        .merge(guarded)
        .merge(crate::web::router())
        // JSON 404 and 405; after every route, so the 405 covers them all.
        .fallback(tessera_http::not_found)
        .method_not_allowed_fallback(tessera_http::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(timeout, limits::request_timeout))
        .with_state(state)
}

/// An API error: a status and a message for the caller.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // As documented: a 503 says when to try again.
        if self.0 == StatusCode::SERVICE_UNAVAILABLE {
            return limits::unavailable(self.1);
        }
        tessera_http::ApiError::new(self.0, self.1).into_response()
    }
}

impl From<RunError> for ApiError {
    /// A refused request answers 4xx with its message; a failure of ours
    /// answers 503 (for now) or 500 with one line, its cause (with every
    /// source) logged.
    fn from(e: RunError) -> Self {
        let status = match &e {
            RunError::NotFound(_) => StatusCode::NOT_FOUND,
            RunError::Confirmation(_) => StatusCode::FORBIDDEN,
            RunError::Spend(e) if e.is_unconfirmed() => StatusCode::FORBIDDEN,
            RunError::WrongState { .. }
            | RunError::Changed { .. }
            | RunError::Store(StoreError::Duplicate(_)) => StatusCode::CONFLICT,
            _ if e.is_request() => StatusCode::UNPROCESSABLE_ENTITY,
            _ if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            _ => {
                tracing::error!(error = %e, cause = %causes(&e), "request failed");
                return Self(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error; see the orchestrator log".into(),
                );
            }
        };
        Self(status, e.to_string())
    }
}

/// The sources of `e`, outermost first, joined by `: ` (empty without any).
fn causes(e: &dyn std::error::Error) -> String {
    let mut out = Vec::new();
    let mut next = e.source();
    while let Some(source) = next {
        out.push(source.to_string());
        next = source.source();
    }
    out.join(": ")
}

fn bad_request(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

/// Tells the caller: the token holder ([`Caller::Admin`]) or a signed-in
/// sponsor. In single-key mode reads stay open, as they were.
async fn identify(
    State(state): State<AppState>,
    headers: HeaderMap,
    mut req: Request,
    next: Next,
) -> Response {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let admin = state.admin_token();
    let caller = match (given, state.operator()) {
        (Some(t), _) if admin.is_some_and(|a| constant_time_eq(t.as_bytes(), a.as_bytes())) => {
            Ok(Caller::Admin)
        }
        (Some(t), Some(_)) => {
            let hash = crate::auth::token_hash(t);
            match state.orch.store().session(&hash, now_secs()).await {
                Ok(Some(address)) => match address.parse::<Address>() {
                    Ok(a) => Ok(Caller::Sponsor(a, hash)),
                    Err(_) => Err(ApiError(StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the orchestrator log".into())),
                },
                Ok(None) => Err(ApiError(
                    StatusCode::UNAUTHORIZED,
                    "invalid or expired session: sign in again (GET /api/auth/nonce, POST /api/auth/login)".into(),
                )),
                Err(e) => Err(ApiError::from(RunError::from(e))),
            }
        }
        // Single-key mode: reads are open, as they always were.
        (_, None) if req.method() == axum::http::Method::GET => Ok(Caller::Admin),
        (Some(_), None) => Err(ApiError(StatusCode::UNAUTHORIZED, "invalid bearer token".into())),
        (None, Some(_)) => Err(ApiError(
            StatusCode::UNAUTHORIZED,
            "missing bearer token: sign in with Ethereum (GET /api/auth/nonce, POST /api/auth/login) and send Authorization: Bearer <session token>".into(),
        )),
        (None, None) => Err(ApiError(
            StatusCode::UNAUTHORIZED,
            "missing bearer token: send Authorization: Bearer <token>".into(),
        )),
    };
    match caller {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// Run `raw`'s canonical id, when `caller` may see it: the admin every
/// run, a sponsor only its own (another's answers 404, as a missing one).
async fn owned(s: &AppState, caller: &Caller, raw: &str) -> Result<String, ApiError> {
    let id = run_id(raw)?;
    if let Caller::Sponsor(address, _) = caller {
        let owner = s.orch.store().owner(&id).await.map_err(RunError::from)?;
        if owner.as_deref() != Some(crate::grants::owner_key(*address).as_str()) {
            return Err(RunError::NotFound(id).into());
        }
    }
    Ok(id)
}

/// Records who owns a run just proposed: the signed-in sponsor, or in
/// single-key mode serve's own key.
async fn record_owner(s: &AppState, caller: &Caller, id: &str) -> Result<(), ApiError> {
    let owner = match (caller, s.operator()) {
        (Caller::Sponsor(a, _), _) => Some(*a),
        (Caller::Admin, None) => Some(s.orch.chain().sponsor()),
        // The operator's own proposals belong to whoever grants them.
        (Caller::Admin, Some(_)) => None,
    };
    if let Some(owner) = owner {
        s.orch
            .store()
            .set_owner(id, &crate::grants::owner_key(owner))
            .await
            .map_err(RunError::from)?;
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Parses a run id (a plan id) into its canonical form. Exactly `0x` and
/// 64 hex digits, as documented: the hex parser alone would also take the
/// digits without `0x`.
fn run_id(raw: &str) -> Result<String, ApiError> {
    raw.strip_prefix("0x")
        .filter(|hex| hex.len() == 64)
        .and_then(|_| raw.parse::<B256>().ok())
        .map(|id| id.to_string())
        .ok_or_else(|| bad_request(format!("{raw:?} is not a run id (0x + 64 hex digits)")))
}

async fn health(State(s): State<AppState>) -> Json<serde_json::Value> {
    let chain = s.orch.chain();
    Json(json!({
        "status": "ok",
        "chain_id": chain.deployment().chain_id,
        "escrow": chain.deployment().task_escrow,
        "sponsor": chain.sponsor(),
        "mode": if s.operator().is_some() { "operator" } else { "single-key" },
        "operator": s.operator().map(|_| chain.sponsor()),
        "open_streams": s.gate.open(),
        "run_drivers": s.orch.drivers().driving(),
        "lane": s.orch.lane().map(|l| json!({
            "lane": l.name(), "replica": l.id(), "holds": l.holds(), "epoch": l.epoch(),
        })),
        "runtime_tasks": tokio::runtime::Handle::current().metrics().num_alive_tasks(),
    }))
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

async fn create_plan(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBytes(body): JsonBytes,
) -> Result<impl IntoResponse, ApiError> {
    // `1288.0` is an integer too (JSON Schema's reading, which the document uses).
    let body = tessera_http::whole_numbers(&body).map_or(body, Into::into);
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError(StatusCode::UNPROCESSABLE_ENTITY, "body is not UTF-8".into()))?;
    let plan =
        Plan::from_json_nested(text, s.orch.config().max_nesting_depth).map_err(RunError::from)?;
    let view = s.orch.propose(plan).await?;
    record_owner(&s, &caller, &view.run.id).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    state: Option<String>,
    limit: Option<u32>,
}

/// Runs newest first: at most `limit` (default 100, at most 1,000), only
/// those in `state` when given.
async fn list_runs(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ListQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let state = q
        .state
        .as_deref()
        .map(|w| {
            RunState::parse(w).map_err(|_| {
                ApiError(StatusCode::UNPROCESSABLE_ENTITY, format!("unknown run state {w:?}"))
            })
        })
        .transpose()?;
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_RUN_LIST {
        return Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("limit runs from 1 to {MAX_RUN_LIST}"),
        ));
    }
    let owner = match &caller {
        Caller::Sponsor(a, _) => Some(crate::grants::owner_key(*a)),
        Caller::Admin => None,
    };
    let runs =
        s.orch.store().run_list_of(owner.as_deref(), state, limit).await.map_err(RunError::from)?;
    Ok(Json(json!({ "runs": runs })))
}

async fn show_run(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(s.orch.view(&owned(&s, &caller, &id).await?).await?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    #[serde(default)]
    confirmation_token: Option<String>,
    /// Operator mode: the sponsor's signed grant for the plan.
    #[serde(default)]
    grant: Option<SignedGrant>,
    /// Operator mode: an EIP-2612 permit, when the allowance is short.
    #[serde(default)]
    permit: Option<PermitGiven>,
}

async fn approve(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBytes(body): JsonBytes,
) -> Result<impl IntoResponse, ApiError> {
    // The body is optional: empty, `null` or `{"confirmation_token": "0x…"}`.
    let body: ApproveBody = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveBody::default()
    } else {
        tessera_http::parse::<Option<ApproveBody>>(&body)
            .map_err(|e| ApiError(e.status(), e.message().into()))?
            .unwrap_or_default()
    };
    let id = owned(&s, &caller, &id).await?;
    let Some(operator) = s.operator() else {
        if body.grant.is_some() || body.permit.is_some() {
            return Err(ApiError(
                StatusCode::UNPROCESSABLE_ENTITY,
                "this orchestrator runs in single-key mode: its own key funds plans; send no grant"
                    .into(),
            ));
        }
        return Ok(Json(s.orch.approve(&id, body.confirmation_token.as_deref()).await?));
    };
    let Some(grant) = body.grant else {
        return Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "approving a plan here needs its sponsor's signed grant: GET /api/runs/{id}/grant, sign its typed_data (and the permit's, when asked), then send {{\"grant\": {{\"terms\": …, \"signature\": \"0x…\"}}}}"
            ),
        ));
    };
    // The sponsor is the one signed in; for the admin, the run's owner (or,
    // for the operator's own proposal, whoever granted it).
    let owner = s.orch.store().owner(&id).await.map_err(RunError::from)?;
    let sponsor = match (&caller, owner) {
        (Caller::Sponsor(a, _), _) => *a,
        (Caller::Admin, Some(o)) => o.parse().map_err(|_| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error; see the orchestrator log".into(),
            )
        })?,
        (Caller::Admin, None) => grant.terms.sponsor,
    };
    let checked = s.orch.check_signed_grant(&id, sponsor, grant, body.permit).await?;
    let key = crate::grants::owner_key(sponsor);
    let budget = checked.grant.terms.budget;
    let row = GrantRow {
        grant_json: serde_json::to_string(&checked.grant).map_err(RunError::PlanEncoding)?,
        permit_json: checked
            .permit
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(RunError::PlanEncoding)?,
    };
    let now = now_secs();
    let cap = operator.max_sponsor_spend.base_units();
    let refused = s
        .orch
        .store()
        .reserve_sponsor_spend(&id, &key, budget, now, now.saturating_sub(24 * 3600), cap)
        .await
        .map_err(RunError::from)?;
    if let Some(spent) = refused {
        return Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "sponsor {sponsor} approved {spent} in the last 24 h; {budget} more would pass the per-sponsor cap of {cap} (USDC base units)"
            ),
        ));
    }
    let store = s.orch.store();
    let approved = async {
        store.set_owner(&id, &key).await?;
        store.set_grant(&id, &row).await?;
        s.orch.approve(&id, body.confirmation_token.as_deref()).await
    };
    match approved.await {
        Ok(view) => Ok(Json(view)),
        Err(e) => {
            // Not approved: it counts for nothing against the cap.
            if let Err(e) = store.drop_sponsor_approval(&id).await {
                tracing::warn!(error = %e, run = %id, "forgetting a failed approval");
            }
            Err(e.into())
        }
    }
}

/// `GET /api/runs/{id}/grant`: what the sponsor signs to approve the plan.
async fn grant_request(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let id = owned(&s, &caller, &id).await?;
    if s.operator().is_none() {
        return Err(ApiError(
            StatusCode::CONFLICT,
            "this orchestrator runs in single-key mode: its own key funds plans; no grant is asked"
                .into(),
        ));
    }
    let sponsor = match &caller {
        Caller::Sponsor(a, _) => *a,
        Caller::Admin => match s.orch.store().owner(&id).await.map_err(RunError::from)? {
            Some(o) => o.parse().map_err(|_| {
                ApiError(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error; see the orchestrator log".into(),
                )
            })?,
            None => {
                return Err(ApiError(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!(
                        "run {id} has no sponsor yet: its sponsor signs in and asks for the grant"
                    ),
                ));
            }
        },
    };
    Ok(Json(s.orch.grant_request(&id, sponsor).await?))
}

/// `GET /api/auth/nonce`: a single-use sign-in nonce, for 5 minutes.
async fn login_nonce(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    single_key_refusal(&s)?;
    let nonce = crate::auth::new_nonce();
    let now = now_secs();
    let expires_at = now + crate::auth::NONCE_TTL_SECS;
    s.orch.store().put_login_nonce(&nonce, expires_at, now).await.map_err(RunError::from)?;
    Ok(Json(json!({ "nonce": nonce, "expires_at": expires_at })))
}

fn single_key_refusal(s: &AppState) -> Result<&OperatorAccess, ApiError> {
    s.operator().ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            "this orchestrator runs in single-key mode: there is no sign-in; send its TESSERA_API_TOKEN".into(),
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    message: String,
    signature: Bytes,
}

/// `POST /api/auth/login`: an EIP-4361 message and its signature for a
/// session token.
async fn login(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(body): Body<LoginBody>,
) -> Result<impl IntoResponse, ApiError> {
    let operator = single_key_refusal(&s)?;
    let refused = |e: crate::auth::AuthError| {
        if e.is_request() {
            ApiError(StatusCode::UNAUTHORIZED, format!("sign-in refused: {e}"))
        } else {
            ApiError(StatusCode::SERVICE_UNAVAILABLE, format!("sign-in failed: {e}"))
        }
    };
    let message = crate::auth::SiweMessage::parse(&body.message)
        .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let domain = operator.public_origin.as_deref().unwrap_or(host);
    let now = now_secs();
    let chain_id = s.orch.chain().deployment().chain_id;
    let expires_at = message.check(domain, chain_id, now).map_err(refused)?;
    crate::auth::verify_signature(
        s.orch.chain().provider(),
        &body.message,
        message.address,
        &body.signature,
    )
    .await
    .map_err(refused)?;
    if !s.orch.store().take_login_nonce(&message.nonce, now).await.map_err(RunError::from)? {
        return Err(refused(crate::auth::AuthError::Nonce));
    }
    let (token, hash) = crate::auth::new_token();
    let address = crate::grants::owner_key(message.address);
    s.orch.store().put_session(&hash, &address, expires_at, now).await.map_err(RunError::from)?;
    tracing::info!(sponsor = %address, "sponsor signed in");
    Ok(Json(json!({ "token": token, "address": message.address, "expires_at": expires_at })))
}

/// `POST /api/auth/logout`: ends the caller's session.
async fn logout(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    single_key_refusal(&s)?;
    match caller {
        Caller::Sponsor(_, hash) => {
            s.orch.store().end_session(&hash).await.map_err(RunError::from)?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        Caller::Admin => Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the admin token has no session to end".into(),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyBody {
    brief: String,
    #[serde(default)]
    payload: Option<String>,
    /// How executors are chosen; balanced when none.
    #[serde(default)]
    policy: Option<Selection>,
}

async fn classify(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ClassifyBody>,
) -> Result<impl IntoResponse, ApiError> {
    let policy = body.policy.unwrap_or_default();
    let outcome =
        s.orch.classify_brief(&s.classifier, &body.brief, body.payload.as_deref(), policy).await?;
    if let Some(run) = &outcome.run {
        record_owner(&s, &caller, &run.run.id).await?;
    }
    let status = if outcome.run.is_some() { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(outcome)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfirmBody {
    amount: String,
    recipients: Vec<Address>,
}

async fn confirm(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<ConfirmBody>,
) -> Result<impl IntoResponse, ApiError> {
    let token =
        s.orch.confirm(&owned(&s, &caller, &id).await?, &body.amount, &body.recipients).await?;
    Ok(Json(json!({ "confirmation_token": token })))
}

async fn edit(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(edit): Body<Edit>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(s.orch.edit(&owned(&s, &caller, &id).await?, edit).await?))
}

async fn cancel(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(s.orch.cancel(&owned(&s, &caller, &id).await?).await?))
}

#[derive(Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
enum ReviewBody {
    Approve,
    Dispute { reason: String },
}

async fn review(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, index)): Path<(String, u32)>,
    Body(body): Body<ReviewBody>,
) -> Result<impl IntoResponse, ApiError> {
    let decision = match body {
        ReviewBody::Approve => Decision::Approve(index),
        ReviewBody::Dispute { reason } => Decision::Dispute(index, reason),
    };
    queue(&s, &caller, &id, decision).await
}

async fn retry(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, index)): Path<(String, u32)>,
) -> Result<impl IntoResponse, ApiError> {
    queue(&s, &caller, &id, Decision::Retry(index)).await
}

/// An executor named, or a policy that chooses one; with the new cost
/// typed (`amount`, USDC) when the change raises it on a high-stakes run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecutorBody {
    #[serde(default)]
    executor: Option<Address>,
    #[serde(default)]
    policy: Option<Selection>,
    #[serde(default)]
    amount: Option<String>,
}

async fn change_executor(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, index)): Path<(String, u32)>,
    Body(body): Body<ExecutorBody>,
) -> Result<Response, ApiError> {
    let typed = body.amount.as_deref();
    match (body.executor, body.policy) {
        (Some(executor), None) => {
            let id = owned(&s, &caller, &id).await?;
            let decision = Decision::ChangeExecutor(index, executor);
            let seq = s.orch.decide_typed(&id, decision, typed).await?;
            let body = json!({ "run": id, "decision": seq, "status": "queued" });
            Ok((StatusCode::ACCEPTED, Json(body)).into_response())
        }
        (None, Some(policy)) => {
            // The policy picks among the others; the choice is queued like
            // a named executor, and answered with its reasons.
            let id = owned(&s, &caller, &id).await?;
            let choice = s.orch.choose_other(&id, index, policy).await?;
            let decision = Decision::ChangeExecutor(index, choice.executor);
            let seq = s.orch.decide_typed(&id, decision, typed).await?;
            let body = json!({ "run": id, "decision": seq, "status": "queued", "choice": choice });
            Ok((StatusCode::ACCEPTED, Json(body)).into_response())
        }
        _ => Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            "send either an executor (an address) or a policy (cheapest, reliable or balanced)"
                .into(),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointBody {
    decision: CheckpointVerdict,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum CheckpointVerdict {
    Approve,
    Reject,
}

async fn checkpoint(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, name)): Path<(String, String)>,
    Body(body): Body<CheckpointBody>,
) -> Result<impl IntoResponse, ApiError> {
    let decision = Decision::Checkpoint {
        name,
        approve: matches!(body.decision, CheckpointVerdict::Approve),
        reason: body.reason.filter(|r| !r.trim().is_empty()),
    };
    queue(&s, &caller, &id, decision).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppealBody {
    index: u32,
    reason: String,
}

async fn appeal(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<AppealBody>,
) -> Result<impl IntoResponse, ApiError> {
    queue(&s, &caller, &id, Decision::Appeal(body.index, body.reason)).await
}

async fn queue(
    s: &AppState,
    caller: &Caller,
    id: &str,
    decision: Decision,
) -> Result<Response, ApiError> {
    let id = owned(s, caller, id).await?;
    let seq = s.orch.decide(&id, decision).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "run": id, "decision": seq, "status": "queued" })))
        .into_response())
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<i64>,
    /// `false`: the events stored so far, then the stream ends (a reader
    /// that shows a run rather than follows it).
    follow: Option<bool>,
}

async fn run_events(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = owned(&s, &caller, &id).await?;
    s.orch.view(&id).await?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let after = last_event_id.or(q.after).unwrap_or(0);
    let follow = q.follow.unwrap_or(true);
    let orch = Arc::clone(&s.orch);
    Ok(s.gate.stream(move |tx| async move {
        // Subscribe before reading the backlog so nothing falls in between.
        let mut live = orch.subscribe();
        // Replica mode: the live feed may have missed events other replicas
        // stored; the store has them.
        let mut resync = orch.resyncs();
        let mut last = after;
        let mut done = false;
        let mut replay = true;
        let send = |ev: EventRow| {
            tx.send(Event::default().id(ev.seq.to_string()).event(ev.kind).data(ev.body))
        };
        while !done {
            if replay {
                replay = false;
                let Ok(backlog) = orch.store().events_after(&id, last).await else { return };
                for ev in backlog {
                    last = ev.seq;
                    done |= is_final(&ev.kind);
                    if send(ev).await.is_err() {
                        return;
                    }
                }
                if !follow {
                    return;
                }
                continue;
            }
            let next = tokio::select! {
                next = live.recv() => next,
                Ok(()) = resync.changed() => {
                    replay = true;
                    continue;
                }
            };
            match next {
                // A gap (an event relayed from another replica ahead of
                // one stored here): the store has both, in order.
                Ok(ev) if ev.run_id == id && ev.seq > last + 1 => replay = true,
                Ok(ev) if ev.run_id == id && ev.seq > last => {
                    last = ev.seq;
                    done = is_final(&ev.kind);
                    if send(ev).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                // Fell behind: the store has everything.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => replay = true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RankingQuery {
    capability: String,
    #[serde(default)]
    policy: Option<Selection>,
}

/// `GET /api/agents/ranking`: every eligible agent offering the capability,
/// best first under the policy (balanced when none), each with why it
/// stands there (see [`crate::select::explain`]).
async fn ranking(
    State(s): State<AppState>,
    Query(q): Query<RankingQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let policy = q.policy.unwrap_or_default();
    let agents = s.orch.ranking(&q.capability, policy).await?;
    Ok(Json(json!({ "capability": q.capability, "policy": policy, "agents": agents })))
}

/// `GET /api/capabilities`: the capability catalogue plans are made from,
/// and where it comes from (the embedded index, or the built-in
/// capabilities alone without one).
async fn capabilities(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let catalogue = s.orch.catalogue().await.map_err(RunError::from)?;
    let source = if s.orch.reads_catalogue() { "index" } else { "built-in" };
    Ok(Json(json!({ "source": source, "entries": catalogue.entries })))
}

/// `GET /api/blobs/{hash}`: the shared blob handler over the run store's
/// blobs (see [`tessera_http::blobs`]).
async fn blob(State(s): State<AppState>, Path(hash): Path<String>) -> Response {
    let store = Arc::clone(s.orch.blob_sources().local());
    tessera_http::blobs::answer(store, &hash).await.unwrap_or_else(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_documents_every_route_and_nothing_else() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        let mut documented: Vec<(String, String)> = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.push((method.clone(), path.clone()));
            }
        }
        let mut routes: Vec<(String, String)> =
            ROUTES.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
        documented.sort();
        routes.sort();
        assert_eq!(documented, routes);
        assert_eq!(doc["openapi"], "3.1.0");
    }

    /// The event stream's documented event names are the Rust event kinds,
    /// both ways and in order.
    #[test]
    fn openapi_names_every_event_kind() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        let kinds: Vec<&str> = crate::state::EventKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(doc["components"]["schemas"]["EventKind"]["enum"], json!(kinds));
    }

    #[test]
    fn run_ids_are_canonical() {
        let upper = format!("0x{}", "AB".repeat(32));
        assert_eq!(run_id(&upper).unwrap(), format!("0x{}", "ab".repeat(32)));
        assert!(run_id("0x12").is_err());
        assert!(run_id("plan").is_err());
    }

    #[test]
    fn a_blob_store_io_failure_answers_500_and_keeps_its_cause_for_the_log() {
        use tessera_bindings::envelope::{
            BlobError, BlobSources, DEFAULT_INLINE_LIMIT, EnvelopeError, FsBlobStore,
        };
        // Not a directory: every write fails.
        let sources = BlobSources::new(Arc::new(FsBlobStore::new("/dev/null/blobs")));
        let reason = json!({ "reason": "x".repeat(2 * DEFAULT_INLINE_LIMIT) }).to_string();
        let failed = sources.publish(reason.as_bytes()).unwrap_err();
        assert!(matches!(failed, EnvelopeError::Store(BlobError::Io { .. })), "{failed}");
        let e = RunError::Reason(failed);
        assert!(!e.is_request() && !e.is_unavailable());
        assert!(causes(&e).contains("/dev/null/blobs"), "{}", causes(&e));
        let ApiError(status, body) = ApiError::from(e);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!body.contains("/dev/null") && !body.contains('\n'), "{body}");
    }

    #[test]
    fn request_errors_answer_4xx_with_their_message() {
        let status = |e: RunError| ApiError::from(e).0;
        let capability = tessera_bindings::capability::encode("Summarize").unwrap_err();
        assert_eq!(status(capability.into()), StatusCode::UNPROCESSABLE_ENTITY);
        let brief = tessera_classifier::ClassifyError::Empty;
        assert_eq!(status(brief.into()), StatusCode::UNPROCESSABLE_ENTITY);
        let id = format!("0x{}", "ab".repeat(32));
        assert_eq!(status(RunError::changed(&id, "approval")), StatusCode::CONFLICT);
        let wrong = RunError::wrong_state(&id, crate::state::RunState::Running, "an edit");
        assert_eq!(wrong.to_string(), format!("run {id} is running: an edit is not possible now"));
        assert_eq!(status(wrong), StatusCode::CONFLICT);
        let amount = tessera_bindings::usdc::Usdc::parse("lots").unwrap_err();
        let typed = RunError::Amount { text: "lots".into(), source: amount };
        assert!(std::error::Error::source(&typed).is_some());
        let ApiError(code, body) = ApiError::from(typed);
        assert_eq!(
            (code, body.as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "\"lots\" is not an amount in USDC")
        );
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
