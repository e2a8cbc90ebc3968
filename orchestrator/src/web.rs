//! The web plan card, served by the orchestrator itself: brief →
//! classification → plan card (approve / edit / cancel) → live DAG with a
//! drawer per sub-task, past plans and the agents table.
//!
//! Plain static files compiled into the binary (`orchestrator/web/`), so
//! nothing is fetched from anywhere else at run time: the Content Security
//! Policy allows this origin only. Every page path (`/`, `/runs/<id>`,
//! `/history`, `/agents`) answers the same document; the script routes on
//! the path, so a shared run URL restores its view after a reload.

use axum::{
    Router,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
    routing::get,
};

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_CSS: &str = include_str!("../web/app.css");

/// The script's ES modules, served at `/assets/<name>`: `app.js` (routing
/// and start) imports the others. Every module the page loads is listed
/// here, so it is compiled into the binary and served same-origin.
const SCRIPTS: &[(&str, &str)] = &[
    ("app.js", include_str!("../web/app.js")),
    ("format.js", include_str!("../web/format.js")),
    ("kinds.js", include_str!("../web/kinds.js")),
    ("dom.js", include_str!("../web/dom.js")),
    ("api.js", include_str!("../web/api.js")),
    ("agents.js", include_str!("../web/agents.js")),
    ("nav.js", include_str!("../web/nav.js")),
    ("brief.js", include_str!("../web/brief.js")),
    ("plan-card.js", include_str!("../web/plan-card.js")),
    ("run.js", include_str!("../web/run.js")),
    ("drawer.js", include_str!("../web/drawer.js")),
    ("pages.js", include_str!("../web/pages.js")),
    ("dag.js", include_str!("../web/dag.js")),
    ("siwe.js", include_str!("../web/siwe.js")),
    ("keccak.js", include_str!("../web/keccak.js")),
    ("wallet.js", include_str!("../web/wallet.js")),
    ("sse.js", include_str!("../web/sse.js")),
    ("sponsor.js", include_str!("../web/sponsor.js")),
];

/// Same-origin only: no CDN, no inline script, no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Page paths that answer the app's document.
pub const PAGES: &[&str] = &["/", "/runs", "/runs/{id}", "/history", "/agents"];

/// The UI's routes, to merge into the API router.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut r = Router::new()
        .route("/assets/app.css", get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }));
    for &(name, body) in SCRIPTS {
        r = r.route(
            &format!("/assets/{name}"),
            get(move || async move { asset(body, "text/javascript; charset=utf-8") }),
        );
    }
    for page in PAGES {
        r = r.route(page, get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }));
    }
    r
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // Assets change with the binary; a reload must never show a stale UI.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_loads_only_same_origin_assets_it_serves() {
        for src in ["/assets/app.js", "/assets/app.css"] {
            assert!(INDEX_HTML.contains(src), "index.html references {src}");
        }
        // Every module a script imports is one this file serves.
        let served: Vec<&str> = SCRIPTS.iter().map(|(name, _)| *name).collect();
        for (name, js) in SCRIPTS {
            for import in js.lines().filter_map(|l| l.split(" from './").nth(1)) {
                let target = import.trim_end_matches(['\'', ';']);
                assert!(served.contains(&target), "{name} imports {target}, which is not served");
            }
        }
        let imported =
            |target: &str| SCRIPTS.iter().any(|(_, js)| js.contains(&format!("from './{target}'")));
        for name in &served {
            assert!(*name == "app.js" || imported(name), "{name} is served but never imported");
        }
        // No remote resources and no inline script: the CSP forbids both.
        for needle in ["http://", "https://", "<script>", "onclick=", "style=\""] {
            assert!(!INDEX_HTML.contains(needle), "index.html contains {needle:?}");
        }
        for (_, js) in SCRIPTS {
            assert!(!js.contains("https://"), "scripts fetch nothing remote");
            assert!(!js.contains("innerHTML ="), "scripts build the DOM with text nodes");
        }
    }

    /// `web/kinds.js` as the Rust source spells it: the live run states,
    /// the event kinds that end a run's stream, and every event kind.
    fn kinds_js() -> String {
        use crate::state::{EventKind, RunState};
        let quoted = |words: Vec<&str>| words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>();
        let finals = EventKind::ALL.iter().filter(|k| k.is_final()).map(|k| k.as_str()).collect();
        let kinds = quoted(EventKind::ALL.iter().map(|k| k.as_str()).collect());
        format!(
            "// Generated from the Rust source by the orchestrator's test\n\
             // `web::tests::kinds_js_is_generated_from_the_rust_lists`; do not edit:\n\
             // run it with TESSERA_BLESS=1 to rewrite this file.\n\
             \n\
             /// Event kinds after which a run's stream ends (`EventKind::is_final`).\n\
             export const FINAL = new Set([{}]);\n\
             \n\
             /// Run states a driver works on (`RunState::LIVE`).\n\
             export const LIVE = new Set([{}]);\n\
             \n\
             /// Every run event kind (`EventKind::ALL`): the run page listens for each.\n\
             export const EVENT_KINDS = [\n{}];\n",
            quoted(finals).join(", "),
            quoted(RunState::words(&RunState::LIVE)).join(", "),
            kinds.iter().map(|k| format!("  {k},\n")).collect::<String>(),
        )
    }

    /// The UI's lists are the Rust lists, both ways: a kind or state added
    /// in Rust and missing in `kinds.js`, or an entry only `kinds.js` has,
    /// fails here.
    #[test]
    fn kinds_js_is_generated_from_the_rust_lists() {
        let want = kinds_js();
        let have = SCRIPTS.iter().find(|(name, _)| *name == "kinds.js").map(|(_, js)| *js);
        if have != Some(want.as_str()) {
            if std::env::var_os("TESSERA_BLESS").is_some() {
                let path = concat!(env!("CARGO_MANIFEST_DIR"), "/web/kinds.js");
                std::fs::write(path, &want).expect("write web/kinds.js");
                eprintln!("rewrote {path}: commit it");
                return;
            }
            panic!(
                "orchestrator/web/kinds.js differs from the Rust lists: run \
                 `TESSERA_BLESS=1 cargo test -p tessera-orchestrator kinds_js` and commit it\n\
                 expected:\n{want}\nfound:\n{}",
                have.unwrap_or("(not served)")
            );
        }
    }

    /// The page revokes a grant with the escrow's own selector.
    #[test]
    fn the_pages_revoke_grant_selector_is_the_escrows() {
        use alloy::sol_types::SolCall;
        let wallet = SCRIPTS.iter().find(|(name, _)| *name == "wallet.js").map(|(_, js)| *js);
        let wallet = wallet.expect("wallet.js is served");
        let selector = wallet
            .split("export const REVOKE_GRANT_SELECTOR = '")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .expect("wallet.js names the selector");
        let want = tessera_bindings::TaskEscrow::revokeGrantCall::SELECTOR;
        assert_eq!(selector, format!("0x{}", alloy::hex::encode(want)));
    }

    /// Every kind the log formats (`case '…'` in `eventNote`) is a Rust
    /// event kind, so a renamed kind cannot leave a dead formatter behind.
    #[test]
    fn the_event_log_formats_only_rust_event_kinds() {
        let format = SCRIPTS.iter().find(|(name, _)| *name == "format.js").map(|(_, js)| *js);
        let format = format.expect("format.js is served");
        let body =
            format.split("export function eventNote(").nth(1).expect("format.js has eventNote");
        let body = body.split("\n}\n").next().unwrap_or(body);
        let cases: Vec<&str> =
            body.split("case '").skip(1).filter_map(|c| c.split('\'').next()).collect();
        assert!(!cases.is_empty(), "eventNote formats some kinds");
        for case in cases {
            assert!(
                crate::state::EventKind::parse(case).is_ok(),
                "eventNote formats {case:?}, which is no event kind"
            );
        }
    }
}
