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

    #[test]
    fn the_run_page_listens_for_every_event_kind() {
        let format = SCRIPTS.iter().find(|(name, _)| *name == "format.js").map(|(_, js)| *js);
        let format = format.expect("format.js is served");
        for kind in crate::state::EventKind::ALL {
            assert!(format.contains(&format!("'{kind}'")), "EVENT_KINDS lacks {kind}");
        }
    }
}
