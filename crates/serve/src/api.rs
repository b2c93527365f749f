//! The routes, described once ([`ROUTES`], rendered by [`openapi`]) and
//! served by the handlers below: each authenticates, counts the request
//! against its token's rate, and makes one call of the [`Owner`] on a
//! blocking thread (SQLite and the verified view are synchronous).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;

use crate::owner::{DecideRequest, InFlight, IngestQuery};
use crate::tokens::{Capability, Scope, TokenSpec};
use crate::{Error, Owner, Result};

/// One route of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path (`{name}` marks a parameter).
    pub path: &'static str,
    /// The scope a token needs (`None`: no token).
    pub scope: Option<Scope>,
    /// What it does.
    pub summary: &'static str,
    /// The request body's media type (`None`: no body).
    pub body: Option<&'static str>,
    /// The success response's media type.
    pub returns: &'static str,
}

const JSON: &str = "application/json";

/// Every route the server answers; the router is built from this table and
/// the OpenAPI document rendered from it, so neither can drift from the other.
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/v1/health",
        scope: None,
        summary: "Liveness: the store id served.",
        body: None,
        returns: JSON,
    },
    Route {
        method: "GET",
        path: "/v1/openapi.json",
        scope: None,
        summary: "This API as an OpenAPI 3.1 document.",
        body: None,
        returns: JSON,
    },
    Route {
        method: "POST",
        path: "/v1/events",
        scope: Some(Scope::Record),
        summary: "Append events (JSON Lines of {kind, payload, commit?}; never a reserved kind) under the token's session, in one transaction; ?request_id= makes a retry count once.",
        body: Some("application/x-ndjson"),
        returns: JSON,
    },
    Route {
        method: "POST",
        path: "/v1/ingest/{format}",
        scope: Some(Scope::Record),
        summary: "Ingest one report in any `ratchet ingest` format but criterion (a directory): junit, jsonl, bmf, hyperfine, google-benchmark, pytest-benchmark, go-bench, inspect, lm-eval, promptfoo; under the token's session; ?commit=&suite=&direction=&label=&runner=&name=&request_id=.",
        body: Some("application/octet-stream"),
        returns: JSON,
    },
    Route {
        method: "POST",
        path: "/v1/decide",
        scope: Some(Scope::Decide),
        summary: "Decide {class, baseline, candidate, dry_run?} under the class's pinned policy; the verdict is computed and recorded by the server.",
        body: Some(JSON),
        returns: JSON,
    },
    Route {
        method: "GET",
        path: "/v1/status",
        scope: Some(Scope::Read),
        summary: "The store's status (as `ratchet status --json`), from the warm view, with `reverification` (the last full verification of the file: last_full_ms, checked_through, runs, fault — a fault refuses decisions and writes until restart) and `bodies_in_memory_peak`.",
        body: None,
        returns: JSON,
    },
    Route {
        method: "GET",
        path: "/v1/decisions",
        scope: Some(Scope::Read),
        summary: "The newest recorded verdicts (?last=N, default 20), oldest first.",
        body: None,
        returns: JSON,
    },
    Route {
        method: "GET",
        path: "/v1/summary.md",
        scope: Some(Scope::Read),
        summary: "The Markdown summary a pull request shows (?class= and ?candidate=, a full id: only those decisions).",
        body: None,
        returns: "text/markdown",
    },
    Route {
        method: "GET",
        path: "/v1/report.html",
        scope: Some(Scope::Read),
        summary: "The HTML report.",
        body: None,
        returns: "text/html",
    },
    Route {
        method: "POST",
        path: "/v1/policies",
        scope: Some(Scope::Admin),
        summary: "Pin a policy file's classes (the TOML as the body; ?class= pins one): `decide` then answers under the pin.",
        body: Some("application/toml"),
        returns: JSON,
    },
    Route {
        method: "GET",
        path: "/v1/tokens",
        scope: Some(Scope::Admin),
        summary: "Every token minted for this store (ids, scopes, sessions; never secrets).",
        body: None,
        returns: JSON,
    },
    Route {
        method: "POST",
        path: "/v1/tokens",
        scope: Some(Scope::Admin),
        summary: "Mint a token {can, session, cell?, expires? (a lifetime: \"12h\") or expires_at_ms?}; its secret is in this answer only.",
        body: Some(JSON),
        returns: JSON,
    },
    Route {
        method: "DELETE",
        path: "/v1/tokens/{id}",
        scope: Some(Scope::Admin),
        summary: "Revoke a token: refused from the next request on.",
        body: None,
        returns: JSON,
    },
];

/// [`ROUTES`] as an OpenAPI 3.1 document.
pub fn openapi() -> serde_json::Value {
    let mut paths = serde_json::Map::new();
    for r in ROUTES {
        let mut op = serde_json::json!({
            "summary": r.summary,
            "responses": {
                "200": { "description": "done", "content": { r.returns: {} } },
                "default": {
                    "description": "an error: {\"error\": {\"kind\", \"message\"}}",
                    "content": { JSON: { "schema": { "$ref": "#/components/schemas/Error" } } }
                }
            }
        });
        if let Some(scope) = r.scope {
            op["security"] = serde_json::json!([{ "bearer": [scope.as_str()] }]);
            op["x-ratchet-scope"] = scope.as_str().into();
        }
        if let Some(media) = r.body {
            op["requestBody"] = serde_json::json!({ "required": true, "content": { media: {} } });
        }
        let params: Vec<serde_json::Value> = r
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| serde_json::json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if !params.is_empty() {
            op["parameters"] = params.into();
        }
        let entry = paths
            .entry(r.path.to_string())
            .or_insert_with(|| serde_json::json!({}));
        entry[r.method.to_ascii_lowercase()] = op;
    }
    serde_json::json!({
        "openapi": "3.1.0",
        "info": { "title": "ratchet serve", "version": env!("CARGO_PKG_VERSION") },
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": { "Error": {
                "type": "object",
                "required": ["error"],
                "properties": { "error": {
                    "type": "object",
                    "required": ["kind", "message"],
                    "properties": { "kind": {"type": "string"}, "message": {"type": "string"} }
                } }
            } }
        }
    })
}

/// What a handler answers.
enum Reply {
    Json(serde_json::Value),
    Text(String, &'static str),
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, kind) = self.status();
        let mut body =
            serde_json::json!({ "error": { "kind": kind, "message": self.to_string() } });
        if let Error::OverQuota { quota, .. } = &self {
            body["error"]["quota"] = (*quota).into();
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(body)).into_response()
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Json(v) => axum::Json(v).into_response(),
            Reply::Text(t, media) => {
                let mut response = t.into_response();
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
                response
            }
        }
    }
}

type Shared = Arc<Owner>;

/// The router over `owner`: every route of [`ROUTES`], JSON errors for
/// everything else.
pub(crate) fn router(owner: Shared) -> Router {
    let limit = owner.options.max_body_bytes;
    let mut router: Router<Shared> = Router::new();
    for route in ROUTES {
        let handler = match (route.method, route.path) {
            ("GET", "/v1/health") => get(health),
            ("GET", "/v1/openapi.json") => get(openapi_doc),
            ("POST", "/v1/events") => post(events),
            ("POST", "/v1/ingest/{format}") => post(ingest),
            ("POST", "/v1/decide") => post(decide),
            ("GET", "/v1/status") => get(status),
            ("GET", "/v1/decisions") => get(decisions),
            ("GET", "/v1/summary.md") => get(summary),
            ("GET", "/v1/report.html") => get(report),
            ("POST", "/v1/policies") => post(pin),
            ("GET", "/v1/tokens") => get(list_tokens),
            ("POST", "/v1/tokens") => post(mint),
            ("DELETE", "/v1/tokens/{id}") => delete(revoke),
            // A route in the table without a handler: answered as not found
            // (and caught by the test that calls every route).
            _ => continue,
        };
        // A route that needs a token authenticates from the headers alone,
        // before its body is read: a caller without a valid token never
        // gets the server to buffer an upload.
        // A route with a body reads it only under a parse permit: past
        // `max_parsing` requests the rest wait with their bodies unread in
        // their connections, so the bodies in memory are bounded by the
        // permits, not by the connections.
        let handler = if route.body.is_some() {
            handler.route_layer(axum::middleware::from_fn_with_state(
                owner.clone(),
                parse_permit,
            ))
        } else {
            handler
        };
        let handler = if let Some(scope) = route.scope {
            handler.route_layer(axum::middleware::from_fn_with_state(
                (owner.clone(), scope),
                authenticate,
            ))
        } else {
            handler
        };
        router = router.route(route.path, handler);
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(owner.clone(), guard))
        .with_state(owner)
}

/// Authenticates the bearer token and counts the request against its
/// rate; the handler finds the [`Capability`] in the request's extensions.
/// A failed attempt closes the connection, and once failures come faster
/// than [`crate::ServeOptions::failed_auth_per_second`] each is answered
/// 429 after a second's pause: guessing is slow, valid tokens unaffected.
async fn authenticate(
    State((owner, scope)): State<(Shared, Scope)>,
    mut request: Request,
    next: Next,
) -> Response {
    let checked = match bearer(request.headers()) {
        Ok(token) => {
            let owner = owner.clone();
            tokio::task::spawn_blocking(move || {
                let who = owner.authenticate(&token)?;
                owner.admit(&who)?;
                Ok(who)
            })
            .await
            .unwrap_or_else(|e| Err(Error::Internal(format!("the request's task failed: {e}"))))
        }
        Err(e) => Err(e),
    };
    match checked {
        Ok(who) => {
            // The route's scope, before its body is read (a valid token
            // asking beyond its scope is not a failed authentication).
            if let Err(e) = crate::owner::need(&who, scope) {
                return e.into_response();
            }
            request.extensions_mut().insert(who);
            next.run(request).await
        }
        Err(e @ (Error::Unauthorized(_) | Error::Forbidden(_))) => {
            let mut response = if owner.failed_authentication() {
                e.into_response()
            } else {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                Error::RateLimited(format!(
                    "{e}; and too many failed authentications: slow down"
                ))
                .into_response()
            };
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
        Err(e) => e.into_response(),
    }
}

/// Holds one of the owner's parse permits while the request's body is
/// read, parsed and stored (the handler runs inside): waiting here costs
/// the server no body.
async fn parse_permit(State(owner): State<Shared>, request: Request, next: Next) -> Response {
    let Ok(permit) = owner.parsing.clone().acquire_owned().await else {
        return Error::Internal("the parse permits are closed".into()).into_response();
    };
    let response = next.run(request).await;
    drop(permit);
    response
}

/// Times every request out (a slow upload included) and logs it. A
/// request whose write has begun is not cut short: its answer is the
/// write's outcome, so a 408 always means nothing was stored.
async fn guard(State(owner): State<Shared>, mut request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let timeout = owner.options.request_timeout;
    let in_flight = InFlight::default();
    request.extensions_mut().insert(in_flight.clone());
    let answer = next.run(request);
    tokio::pin!(answer);
    let response = match tokio::time::timeout(timeout, &mut answer).await {
        Ok(r) => r,
        Err(_) if in_flight.time_out() => Error::Timeout(format!(
            "the request took longer than {} s (a slow client?); nothing was stored",
            timeout.as_secs()
        ))
        .into_response(),
        Err(_) => answer.await,
    };
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "request"
    );
    response
}

async fn not_found() -> Error {
    Error::NotFound("no such route (see GET /v1/openapi.json)".into())
}

async fn method_not_allowed() -> Response {
    let body = serde_json::json!({ "error": { "kind": "method_not_allowed", "message": "this route does not take that method (see GET /v1/openapi.json)" } });
    (StatusCode::METHOD_NOT_ALLOWED, axum::Json(body)).into_response()
}

fn bearer(headers: &HeaderMap) -> Result<String> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| Error::Unauthorized("no Authorization: Bearer <token> header".into()))?;
    let text = value
        .to_str()
        .map_err(|_| Error::Unauthorized("the Authorization header is not text".into()))?;
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            Ok(token.trim().to_string())
        }
        _ => Err(Error::Unauthorized(
            "the Authorization header is not `Bearer <token>`".into(),
        )),
    }
}

/// Runs `f` for the authenticated caller on a blocking thread (SQLite and
/// the verified view are synchronous).
async fn with_token<F>(owner: Shared, who: Capability, f: F) -> Result<Reply>
where
    F: FnOnce(&Owner, &Capability) -> Result<Reply> + Send + 'static,
{
    tokio::task::spawn_blocking(move || f(&owner, &who))
        .await
        .map_err(|e| Error::Internal(format!("the request's task failed: {e}")))?
}

fn body_of(body: std::result::Result<Bytes, BytesRejection>) -> Result<Bytes> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Error::TooLarge(format!("the body is over the server's limit: {e}"))
        } else {
            Error::BadRequest(format!("the body could not be read: {e}"))
        }
    })
}

/// The query, or a 400 naming what in it was wrong.
fn query_of<T>(query: std::result::Result<Query<T>, QueryRejection>) -> Result<T> {
    query
        .map(|Query(q)| q)
        .map_err(|e| Error::BadRequest(e.body_text()))
}

/// The body as text, or a 400 naming `what` is not UTF-8.
fn text_of<'a>(body: &'a [u8], what: &str) -> Result<&'a str> {
    std::str::from_utf8(body).map_err(|e| Error::BadRequest(format!("{what} is not UTF-8: {e}")))
}

fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::BadRequest(format!("{what}: {e}")))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Reply> {
    serde_json::to_value(v)
        .map(Reply::Json)
        .map_err(|e| Error::Internal(format!("serializing the answer: {e}")))
}

async fn health(State(owner): State<Shared>) -> Result<Reply> {
    let id = tokio::task::spawn_blocking(move || owner.store_id())
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
    Ok(Reply::Json(
        serde_json::json!({ "ok": true, "store_id": id }),
    ))
}

async fn openapi_doc() -> Reply {
    Reply::Json(openapi())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestId {
    request_id: Option<String>,
}

async fn events(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    query: std::result::Result<Query<RequestId>, QueryRejection>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Reply> {
    let params = query_of(query)?;
    let body = body_of(body)?;
    with_token(owner, who, move |o, who| {
        let _held = o.bodies.hold();
        let text = text_of(&body, "the body")?;
        let receipts = o.record_events(who, &in_flight, params.request_id.as_deref(), text)?;
        to_json(&serde_json::json!({
            "store_id": o.store_id()?,
            "receipts": receipts,
            "already_recorded": receipts.is_empty(),
        }))
    })
    .await
}

async fn ingest(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    Path(format): Path<String>,
    query: std::result::Result<Query<IngestQuery>, QueryRejection>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Reply> {
    let params = query_of(query)?;
    let body = body_of(body)?;
    with_token(owner, who, move |o, who| {
        let _held = o.bodies.hold();
        let report = o.ingest(who, &in_flight, &format, &params, &body)?;
        to_json(&serde_json::json!({
            "store_id": o.store_id()?,
            "receipts": report.receipts,
            "already_recorded": report.already_ingested_at.is_some(),
            "ingest": report,
        }))
    })
    .await
}

async fn decide(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Reply> {
    let body = body_of(body)?;
    with_token(owner, who, move |o, who| {
        let _held = o.bodies.hold();
        let request: DecideRequest = json_body(&body, "the decide request")?;
        let run = o.decide(who, &in_flight, &request)?;
        let mut doc = serde_json::to_value(&run.verdict)
            .map_err(|e| Error::Internal(format!("serializing the verdict: {e}")))?;
        // The outcome as every face reads it (`GateStatus`): its name, its
        // words and the exit code `ratchet gate` gives it.
        let status = run.verdict.outcome.status();
        doc["status"] = serde_json::to_value(status).map_err(|e| Error::Internal(e.to_string()))?;
        doc["words"] = status.words().into();
        doc["exit_code"] = status.exit_code().into();
        doc["decision"] =
            serde_json::to_value(run.decision).map_err(|e| Error::Internal(e.to_string()))?;
        doc["store_id"] = o.store_id()?.into();
        Ok(Reply::Json(doc))
    })
    .await
}

async fn status(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
) -> Result<Reply> {
    with_token(owner, who, |o, who| {
        let mut doc = serde_json::to_value(o.status(who)?)
            .map_err(|e| Error::Internal(format!("serializing the status: {e}")))?;
        doc["reverification"] = serde_json::to_value(o.health()?)
            .map_err(|e| Error::Internal(format!("serializing the status: {e}")))?;
        doc["bodies_in_memory_peak"] = o.bodies_peak().into();
        Ok(Reply::Json(doc))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Last {
    last: Option<usize>,
}

async fn decisions(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    query: std::result::Result<Query<Last>, QueryRejection>,
) -> Result<Reply> {
    let params = query_of(query)?;
    with_token(owner, who, move |o, who| {
        let events = o.decisions(who, params.last.unwrap_or(20))?;
        to_json(&serde_json::json!({ "store_id": o.store_id()?, "events": events }))
    })
    .await
}

/// Which decisions the summary is of (`ratchet report --markdown`'s
/// `--class` and `--candidate`, the candidate a full id).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryQuery {
    class: Option<String>,
    candidate: Option<String>,
}

async fn summary(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    query: std::result::Result<Query<SummaryQuery>, QueryRejection>,
) -> Result<Reply> {
    let params = query_of(query)?;
    let which = ratchet_report::Summary {
        class: params.class,
        candidate: params
            .candidate
            .map(|c| {
                ratchet_trace::CommitId::parse(&c)
                    .map_err(|e| Error::BadRequest(format!("candidate {c:?}: {e}")))
            })
            .transpose()?,
    };
    with_token(owner, who, move |o, who| {
        Ok(Reply::Text(
            o.markdown(who, &which)?,
            "text/markdown; charset=utf-8",
        ))
    })
    .await
}

async fn report(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
) -> Result<Reply> {
    with_token(owner, who, |o, who| {
        Ok(Reply::Text(o.html(who)?, "text/html; charset=utf-8"))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinQuery {
    class: Option<String>,
}

async fn pin(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    query: std::result::Result<Query<PinQuery>, QueryRejection>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Reply> {
    let params = query_of(query)?;
    let body = body_of(body)?;
    with_token(owner, who, move |o, who| {
        let _held = o.bodies.hold();
        let text = text_of(&body, "the policy")?;
        let (pins, receipts) = o.pin(who, &in_flight, text, params.class.as_deref())?;
        to_json(&serde_json::json!({
            "store_id": o.store_id()?,
            "receipts": receipts,
            "pins": pins,
        }))
    })
    .await
}

async fn list_tokens(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
) -> Result<Reply> {
    with_token(owner, who, |o, who| {
        let tokens: Vec<_> = o.list_tokens(who)?.into_values().collect();
        to_json(&serde_json::json!({ "store_id": o.store_id()?, "tokens": tokens }))
    })
    .await
}

async fn mint(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Reply> {
    let body = body_of(body)?;
    with_token(owner, who, move |o, who| {
        let _held = o.bodies.hold();
        let spec = token_spec(&body)?;
        let minted = o.mint(who, &in_flight, &spec)?;
        to_json(&serde_json::json!({
            "store_id": o.store_id()?,
            "receipts": [minted.receipt],
            "token": minted.token,
            "id": minted.id,
        }))
    })
    .await
}

/// The mint route's body: a [`TokenSpec`], whose lifetime may be given
/// as the CLI's `--expires` takes it (`"expires": "12h"`, read against the
/// server's clock, the one expiry is checked by) instead of
/// `expires_at_ms`.
fn token_spec(body: &[u8]) -> Result<TokenSpec> {
    let mut doc: serde_json::Value = json_body(body, "the token spec")?;
    let lifetime = match doc.as_object_mut().and_then(|o| o.remove("expires")) {
        None => None,
        Some(serde_json::Value::String(text)) => Some(text),
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "the token spec: expires is a lifetime as text (\"12h\", \"7d\"), not {other}"
            )));
        }
    };
    let mut spec: TokenSpec = serde_json::from_value(doc)
        .map_err(|e| Error::BadRequest(format!("the token spec: {e}")))?;
    if let Some(text) = lifetime {
        if spec.expires_at_ms.is_some() {
            return Err(Error::BadRequest(
                "the token spec: give expires (a lifetime, \"12h\") or expires_at_ms (a time), not both".into(),
            ));
        }
        spec.expires_at_ms = Some(
            crate::tokens::expires_in(&text)
                .map_err(|e| Error::BadRequest(format!("the token spec: expires {e}")))?,
        );
    }
    Ok(spec)
}

async fn revoke(
    State(owner): State<Shared>,
    Extension(who): Extension<Capability>,
    Extension(in_flight): Extension<InFlight>,
    Path(id): Path<String>,
) -> Result<Reply> {
    with_token(owner, who, move |o, who| {
        let receipt = o.revoke(who, &in_flight, &id)?;
        to_json(&serde_json::json!({
            "store_id": o.store_id()?,
            "receipts": [receipt],
            "revoked": id,
        }))
    })
    .await
}
