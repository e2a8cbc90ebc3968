//! The orchestrator API's client for the command line, and what its
//! failures mean as exit codes.

use serde_json::Value;

use crate::orchestrate::ApiArgs;

/// What the client commands exit with, as their `--help` says.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  done; a decision is accepted and queued (`tessera runs show` tells what came of it)
  1  any other failure (a local file, the event stream)
  2  usage error: a missing or malformed argument
  3  refused by the API: a bad request, an unknown run, sub-task or
     checkpoint, or a run in the wrong state (HTTP 400, 404, 409, 422)
  4  unauthorized: TESSERA_API_TOKEN missing or wrong (HTTP 401, 403)
  5  the API unreachable, or it failed (HTTP 5xx)";

/// A request the orchestrator did not take.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// Refused as a bad request or in the wrong state (a 4xx other than
    /// 401 and 403).
    Refused { status: u16, message: String },
    /// Refused for want of the right token (401, 403).
    Unauthorized { status: u16, message: String },
    /// The API failed (5xx).
    Server { service: &'static str, status: u16, message: String },
    /// No answer at all.
    Unreachable { service: &'static str, base: String, error: String },
    /// A success whose body is not the view asked for (another version of
    /// the API, or a broken one).
    Unreadable { service: &'static str, error: String },
}

impl ApiError {
    /// The error for a reply with `status` and the API's `message`.
    pub(crate) fn from_status(status: u16, message: String) -> Self {
        match status {
            401 | 403 => Self::Unauthorized { status, message },
            400..=499 => Self::Refused { status, message },
            _ => Self::Server { service: "orchestrator", status, message },
        }
    }

    /// The API at `base` did not answer: why.
    pub(crate) fn unreachable(base: &str, error: &reqwest::Error) -> Self {
        let (base, error) = (base.to_owned(), error_chain(error));
        Self::Unreachable { service: "orchestrator", base, error }
    }

    /// The same failure, of `service`'s API (the indexer's, say) rather
    /// than the orchestrator's.
    pub(crate) fn of(self, service: &'static str) -> Self {
        match self {
            Self::Server { status, message, .. } => Self::Server { service, status, message },
            Self::Unreachable { base, error, .. } => Self::Unreachable { service, base, error },
            Self::Unreadable { error, .. } => Self::Unreadable { service, error },
            other => other,
        }
    }

    /// The process exit code it means (see [`EXIT_CODES`]).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Refused { .. } => 3,
            Self::Unauthorized { .. } => 4,
            Self::Server { .. } | Self::Unreachable { .. } | Self::Unreadable { .. } => 5,
        }
    }

    /// The HTTP status, when the API answered.
    #[cfg(test)]
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. }
            | Self::Unauthorized { status, .. }
            | Self::Server { status, .. } => Some(*status),
            Self::Unreachable { .. } | Self::Unreadable { .. } => None,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reason = |status: &u16| {
            reqwest::StatusCode::from_u16(*status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .map(|r| format!("{status} {r}"))
                .unwrap_or_else(|| status.to_string())
        };
        match self {
            Self::Refused { status, message } => {
                write!(f, "refused ({}): {message}", reason(status))
            }
            Self::Unauthorized { status, message } => write!(
                f,
                "unauthorized ({}): {message} (set TESSERA_API_TOKEN to the orchestrator's token)",
                reason(status)
            ),
            Self::Server { service, status, message } => {
                write!(f, "the {service} failed ({}): {message}", reason(status))
            }
            Self::Unreachable { service, base, error } => {
                write!(f, "the {service} at {base} is unreachable: {error}")
            }
            Self::Unreadable { service, error } => {
                write!(f, "the {service} answered what this client cannot read: {error}")
            }
        }
    }
}

impl std::error::Error for ApiError {}

/// The exit code for `error`: an [`ApiError`]'s anywhere in its chain,
/// 1 for anything else.
pub(crate) fn exit_code(error: &eyre::Report) -> u8 {
    error.chain().find_map(|e| e.downcast_ref::<ApiError>()).map_or(1, ApiError::exit_code)
}

/// The orchestrator's API, with the token from TESSERA_API_TOKEN when set,
/// or a sponsor's session (see [`Client::connect`]).
pub(crate) struct Client {
    pub(crate) base: String,
    token: Option<String>,
    pub(crate) http: reqwest::Client,
    /// Signed in as this sponsor on an operator-mode server.
    pub(crate) sponsor: Option<(alloy::signers::local::PrivateKeySigner, crate::sponsor::Server)>,
}

impl Client {
    pub(crate) fn new(args: &ApiArgs) -> Self {
        Self {
            base: args.api.trim_end_matches('/').to_owned(),
            token: std::env::var("TESSERA_API_TOKEN").ok(),
            http: reqwest::Client::new(),
            sponsor: None,
        }
    }

    /// [`Client::new`], signed in with the sponsor's key (TESSERA_SPONSOR_KEY
    /// or `--keystore`) when the server runs in operator mode; the key
    /// stays here, only signatures are sent.
    pub(crate) async fn connect(args: &ApiArgs) -> eyre::Result<Self> {
        let mut client = Self::new(args);
        let Some(signer) = crate::sponsor::key(args.keystore.as_ref())? else {
            return Ok(client);
        };
        let mut server = crate::sponsor::server(&client).await?;
        if let Some(path) = &args.deployment {
            server.trust(&tessera_bindings::deployment::Deployment::load(path)?)?;
        }
        if server.operator.is_some() {
            client.token = Some(crate::sponsor::sign_in(&client, &signer, server.chain_id).await?);
            client.sponsor = Some((signer, server));
        }
        Ok(client)
    }

    /// A GET of `path` with the client's token (for streams).
    pub(crate) fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.get(format!("{}{path}", self.base));
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Sends `body` (when given) with `method` to `path`; the JSON reply,
    /// or what kept the API from taking it.
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| ApiError::unreachable(&self.base, &e))?;
        let status = resp.status();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            let message = value["error"].as_str().unwrap_or("no details").to_owned();
            return Err(ApiError::from_status(status.as_u16(), message));
        }
        Ok(value)
    }

    /// [`Client::call`], its reply read as the view `T` the API serialises.
    pub(crate) async fn call_as<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, ApiError> {
        read(self.call(method, path, body).await?)
    }
}

/// A reply read as the view `T` the API serialises.
pub(crate) fn read<T: serde::de::DeserializeOwned>(reply: Value) -> Result<T, ApiError> {
    serde_json::from_value(reply)
        .map_err(|e| ApiError::Unreadable { service: "orchestrator", error: e.to_string() })
}

/// An error and its sources on one line (reqwest's own message alone says
/// little: "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A plan (run) id as the APIs take it: `0x` and 64 hex digits, checked
/// before any request is made (lower-cased).
pub(crate) fn parse_plan_id(s: &str) -> Result<String, String> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(format!("0x{}", hex.to_ascii_lowercase()))
    } else {
        Err(format!("{s:?} is not a plan id: 0x and 64 hex digits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_exit_codes() {
        for (status, code) in
            [(400, 3), (404, 3), (409, 3), (422, 3), (401, 4), (403, 4), (500, 5), (503, 5)]
        {
            let e = ApiError::from_status(status, "x".into());
            assert_eq!((e.status(), e.exit_code()), (Some(status), code), "{status}");
        }
        let gone = ApiError::Unreachable {
            service: "orchestrator",
            base: "http://x".into(),
            error: "refused".into(),
        };
        assert_eq!(gone.exit_code(), 5);
        let unreadable = read::<u32>(serde_json::json!("x")).unwrap_err();
        assert_eq!((unreadable.status(), unreadable.exit_code()), (None, 5));
    }

    #[test]
    fn plan_ids_are_checked_before_any_request() {
        let id = format!("0x{}", "Ab".repeat(32));
        assert_eq!(parse_plan_id(&id).unwrap(), id.to_lowercase());
        for bad in ["0x1234", "", "0x", &format!("0x{}", "g".repeat(64)), &"a".repeat(66)] {
            assert!(parse_plan_id(bad).unwrap_err().contains("is not a plan id"), "{bad}");
        }
    }

    #[test]
    fn the_code_is_found_under_context() {
        use eyre::WrapErr;
        let wrapped: eyre::Result<()> =
            Err(ApiError::from_status(409, "wrong state".into())).wrap_err("confirmation refused");
        assert_eq!(exit_code(&wrapped.unwrap_err()), 3);
        assert_eq!(exit_code(&eyre::eyre!("a local failure")), 1);
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = ApiError::from_status(401, "missing bearer token".into());
        assert_eq!(
            e.to_string(),
            "unauthorized (401 Unauthorized): missing bearer token (set TESSERA_API_TOKEN to \
             the orchestrator's token)"
        );
        let e = ApiError::from_status(422, "the plan has no checkpoint \"x\"".into());
        assert_eq!(
            e.to_string(),
            "refused (422 Unprocessable Entity): the plan has no checkpoint \"x\""
        );
    }
}
