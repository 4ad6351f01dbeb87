//! The resource handlers: get, list, watch, create, update, patch (merge
//! and apply), delete, on a kind's main resource or its `status`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::route::ResourcePath;
use super::watch::{self, Watch};
use super::{error, json, not_found, Body, ServerState};
use crate::error::ApiError;
use crate::kinds::KindSpec;
use crate::selector::Selector;
use crate::state::ListQuery;
use crate::write::Request as Write;

/// The largest request body, as the API server's 3 MiB.
const MAX_BODY: usize = 3 * 1024 * 1024;

type Query = BTreeMap<String, String>;

pub async fn resource(
    shared: &Arc<ServerState>,
    path: ResourcePath,
    query: Query,
    req: Request<Incoming>,
) -> Response<Body> {
    match serve(shared, &path, &query, req).await {
        Ok(response) => response,
        Err(e) => error(&e),
    }
}

/// The kind at a path, checked against its scope and subresources.
fn kind_at(shared: &ServerState, path: &ResourcePath) -> Result<Arc<KindSpec>, ApiError> {
    let kind = shared
        .state()
        .kinds
        .by_path(&path.group, &path.version, &path.plural)
        .ok_or_else(not_found)?;
    let scope_ok = kind.namespaced || path.namespace.is_none();
    let sub_ok = match path.subresource.as_deref() {
        None => true,
        Some("status") => kind.status_subresource,
        Some(_) => false,
    };
    let named_ok = path.name.is_some() || path.subresource.is_none();
    let cluster_named_ok = !(kind.namespaced && path.namespace.is_none() && path.name.is_some());
    if scope_ok && sub_ok && named_ok && cluster_named_ok {
        Ok(kind)
    } else {
        Err(not_found())
    }
}

async fn serve(
    shared: &Arc<ServerState>,
    path: &ResourcePath,
    query: &Query,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let kind = kind_at(shared, path)?;
    let method = req.method().clone();
    if method == Method::GET {
        return match &path.name {
            Some(name) => get(shared, &kind, path, name),
            None if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) => {
                watch(shared, kind, path, query)
            }
            None => list(shared, &kind, path, query),
        };
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_string();
    let manager = query.get("fieldManager").cloned().unwrap_or_else(|| {
        user_agent
            .split('/')
            .next()
            .unwrap_or("unknown")
            .to_string()
    });
    let body = read_body(req).await?;
    let write = Write {
        kind: kind.clone(),
        version: &path.version,
        namespace: path.namespace.as_deref().unwrap_or_default(),
        name: path.name.as_deref(),
        subresource: path.subresource.as_deref().unwrap_or_default(),
        manager: &manager,
    };
    let created_before = path.name.as_ref().is_some_and(|n| {
        shared
            .state()
            .store
            .get(&kind.resource(), write.namespace, n)
            .is_some()
    });
    let (code, result) = match (method, path.name.is_some()) {
        (Method::POST, false) if path.subresource.is_none() => {
            (201, shared.state().create(&write, parse_json(&body)?))
        }
        (Method::PUT, true) => (200, shared.state().update(&write, parse_json(&body)?)),
        (Method::PATCH, true) => {
            patch(shared, &write, query, &content_type, &body, created_before)?
        }
        (Method::DELETE, true) => {
            let options = if body.is_empty() {
                json!({})
            } else {
                parse_json(&body)?
            };
            (200, shared.state().delete(&write, &options))
        }
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            ))
        }
    };
    let object = result?;
    shared.notify();
    Ok(json(code, &served(&object, &kind, &path.version)))
}

type Outcome = (u16, Result<Arc<Value>, ApiError>);

fn patch(
    shared: &ServerState,
    write: &Write<'_>,
    query: &Query,
    content_type: &str,
    body: &[u8],
    existed: bool,
) -> Result<Outcome, ApiError> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    match media {
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
            if !query.contains_key("fieldManager") {
                return Err(ApiError::bad_request("PATCH with an apply content type requires the fieldManager parameter"));
            }
            let force = query.get("force").is_some_and(|f| f == "true");
            let config = parse_yaml(body)?;
            let code = if existed { 200 } else { 201 };
            Ok((code, shared.state().apply(write, config, force)))
        }
        "application/merge-patch+json" => Ok((200, shared.state().merge(write, &parse_json(body)?))),
        // An approximation: lists are replaced and `$patch` directives are
        // not read (kubectl's client-side apply of built-in kinds).
        "application/strategic-merge-patch+json" if crate::kinds::is_builtin(&write.kind) => {
            Ok((200, shared.state().merge(write, &parse_json(body)?)))
        }
        other => Err(ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format: {other} (the stand-in serves application/merge-patch+json, application/apply-patch+yaml, and strategic merge patch on built-in kinds as a merge patch)"))),
    }
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|_| {
            ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("the request body is over {MAX_BODY} bytes, or was cut short"),
            )
        })
}

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))
}

fn parse_yaml(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice(body) {
        return Ok(v);
    }
    serde_yaml_ng::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not YAML: {e}")))
}

/// An object as served at `version`.
fn served(object: &Value, kind: &KindSpec, version: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(kind.api_version(version));
    out
}

fn get(
    shared: &ServerState,
    kind: &KindSpec,
    path: &ResourcePath,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let namespace = path.namespace.as_deref().unwrap_or_default();
    let object = shared
        .state()
        .store
        .get(&kind.resource(), namespace, name)
        .ok_or_else(|| ApiError::not_found(&kind.qualified(), name))?;
    Ok(json(200, &served(&object, kind, &path.version)))
}

fn list(
    shared: &ServerState,
    kind: &KindSpec,
    path: &ResourcePath,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let exact = query
        .get("resourceVersionMatch")
        .is_some_and(|m| m == "Exact");
    let list_query = ListQuery {
        namespace: path.namespace.clone(),
        selector: selector(query)?,
        limit: query.get("limit").and_then(|l| l.parse().ok()),
        continue_token: query.get("continue").filter(|c| !c.is_empty()).cloned(),
        exact_rv: if exact {
            query.get("resourceVersion").and_then(|r| r.parse().ok())
        } else {
            None
        },
    };
    let page = shared.state().list(kind, &list_query)?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|o| served(o, kind, &path.version))
        .collect();
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(token) = page.continue_token {
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(page.remaining);
    }
    Ok(json(
        200,
        &json!({
            "kind": format!("{}List", kind.kind),
            "apiVersion": kind.api_version(&path.version),
            "metadata": metadata,
            "items": items,
        }),
    ))
}

fn selector(query: &Query) -> Result<Selector, ApiError> {
    Selector::parse(
        query.get("labelSelector").map(String::as_str),
        query.get("fieldSelector").map(String::as_str),
    )
}

fn watch(
    shared: &Arc<ServerState>,
    kind: Arc<KindSpec>,
    path: &ResourcePath,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let from = match query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let flag = |k: &str| query.get(k).is_some_and(|v| v == "true" || v == "1");
    let watch = Watch {
        kind,
        version: path.version.clone(),
        namespace: path.namespace.clone(),
        selector: selector(query)?,
        from,
        initial_events: flag("sendInitialEvents"),
        bookmarks: flag("allowWatchBookmarks"),
        timeout: query
            .get("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .map(Duration::from_secs),
    };
    let body = watch::start(shared.clone(), watch);
    let mut response = Response::new(BodyExt::boxed(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
