//! The Kubernetes layer against a mock API server (`tower-test`), as
//! kube-rs/controller-rs tests its controller (src/fixtures.rs there): every
//! request the controller sends is asserted (method, path, query, content
//! type, body) and answered as the API server would. The rules cited are
//! the Kubernetes API conventions (community/contributors/devel/
//! sig-architecture/api-conventions.md) and the server-side apply
//! documentation (kubernetes.io/docs/reference/using-api/server-side-apply/).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use attache_controller::deploy::DEFAULT_NAMESPACE;
use attache_controller::kinds::{named, WatchedKind, WASM_PLUGIN};
use attache_controller::kube::api::{apply_plugin, delete_plugin, write_status, WriteError};
use attache_controller::kube::lease::LeaseLock;
use attache_controller::kube::metrics::{Metrics, Write};
use attache_controller::kube::watch::{self, CacheSync};
use attache_controller::rbac::{self, rules};
use attache_core::topology::ObjectKey;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kube::Client;
use serde_json::{json, Value};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

fn mock() -> (Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// One request as the test sees it.
struct Seen {
    method: Method,
    path: String,
    query: BTreeMap<String, String>,
    content_type: String,
    body: Value,
}

/// How long one step of a scenario may wait (a request from the controller,
/// a round of the controller, the end of the server's script) before the
/// test fails naming that step. Generous for a debug build on a loaded
/// machine: a step here takes milliseconds. Under paused time (the missing-
/// CRD test) it is virtual time, so waits longer than it (`MISSING_RETRY`)
/// take `next_within`.
const STEP: Duration = Duration::from_secs(20);

/// `future`, or a failure naming `step` after [`STEP`].
async fn within<T>(step: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {STEP:?} waiting for {step}"))
}

/// The next request the controller sends; `step` names it in the failure.
async fn next(
    handle: &mut Handle,
    step: &str,
) -> (Seen, tower_test::mock::SendResponse<Response<Body>>) {
    next_within(handle, step, STEP).await
}

async fn next_within(
    handle: &mut Handle,
    step: &str,
    bound: Duration,
) -> (Seen, tower_test::mock::SendResponse<Response<Body>>) {
    let (request, send) = tokio::time::timeout(bound, handle.next_request())
        .await
        .unwrap_or_else(|_| {
            panic!("timed out after {bound:?} waiting for {step}: the controller sent no request")
        })
        .unwrap_or_else(|| panic!("waiting for {step}: the client was dropped"));
    let uri = request.uri().clone();
    let query = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    let content_type = request
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let method = request.method().clone();
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    let seen = Seen {
        method,
        path: uri.path().to_string(),
        query,
        content_type,
        body,
    };
    // Every request the adapter sends is one deploy/controller's RBAC
    // grants (attache_controller::rbac, generated into rbac.yaml).
    let attributes = authorization(&seen);
    assert!(
        rules(DEFAULT_NAMESPACE).allows(&attributes),
        "{step}: {} {} is not granted by deploy/controller/rbac.yaml: {attributes:?}",
        seen.method,
        seen.path
    );
    (seen, send)
}

/// A request's attributes as the API server's authorizer derives them
/// (kubernetes.io/docs/reference/access-authn-authz/authorization/,
/// "Determine the request verb"; paths as in the API conventions:
/// /api/v1 for the core group, /apis/GROUP/VERSION otherwise, then
/// [namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]).
fn authorization(seen: &Seen) -> rbac::Request {
    let parts: Vec<&str> = seen.path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => panic!("not an API path: {}", seen.path),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, resource, more @ ..] => {
            (Some(ns.to_string()), [&[*resource][..], more].concat())
        }
        _ => (None, rest.to_vec()),
    };
    let name = rest.get(1).map(|n| n.to_string());
    let verb = match seen.method.as_str() {
        "GET" | "HEAD" if name.is_some() => "get",
        "GET" | "HEAD"
            if seen
                .query
                .get("watch")
                .is_some_and(|w| w == "true" || w == "1") =>
        {
            "watch"
        }
        "GET" | "HEAD" => "list",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if name.is_some() => "delete",
        "DELETE" => "deletecollection",
        other => panic!("unexpected method {other}"),
    };
    rbac::Request {
        verb: verb.into(),
        group: group.into(),
        resource: rest[0].to_string(),
        subresource: rest.get(2).map(|s| s.to_string()),
        name,
        namespace,
    }
}

/// The API server's side of a scenario, in a task of its own: `script`
/// answers the requests it expects, in order, each bounded by [`STEP`];
/// once it is done, any further request fails the test naming it. Without
/// that last part a request beyond the script was never answered, and the
/// controller, whose client has no timeout of its own, waited for ever: the
/// hang issue 21's note records (the script answered 8 status writes while
/// examples/shop had grown a 9th policy, and kept the mock open).
struct Server<T> {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<(T, Handle)>,
}

fn serve<T, F, Fut>(handle: Handle, script: F) -> Server<T>
where
    F: FnOnce(Handle) -> Fut,
    Fut: Future<Output = (T, Handle)> + Send + 'static,
    T: Send + 'static,
{
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let scripted = script(handle);
    let task = tokio::spawn(async move {
        let (out, mut handle) = scripted.await;
        tokio::select! {
            biased;
            request = handle.next_request() => {
                if let Some((request, _)) = request {
                    // Dropping the response fails the controller's call, so
                    // its round ends and `finish` reports this.
                    panic!(
                        "a request the scenario did not expect: {} {}",
                        request.method(),
                        request.uri()
                    );
                }
            }
            _ = stopped => {}
        }
        (out, handle)
    });
    Server { stop, task }
}

impl<T> Server<T> {
    /// Ends the scenario: what the script returned, or its failure.
    async fn finish(self) -> (T, Handle) {
        let _ = self.stop.send(());
        match within("the end of the server's script", self.task).await {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("the server's script did not finish: {e}"),
        }
    }
}

fn respond(send: tower_test::mock::SendResponse<Response<Body>>, code: u16, body: &Value) {
    send.send_response(
        Response::builder()
            .status(StatusCode::from_u16(code).unwrap())
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap(),
    );
}

/// A `Status` object, the body of every API error (API conventions,
/// "Response Status Kind").
fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn plugin() -> Value {
    json!({
        "apiVersion": "extensions.istio.io/v1alpha1", "kind": "WasmPlugin",
        "metadata": {"name": "attache-edge", "namespace": "infra",
                     "labels": {"app.kubernetes.io/managed-by": "attache"},
                     "ownerReferences": [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": "edge", "uid": "u1"}]},
        "spec": {"url": "file:///etc/attache/attache_filter.wasm", "pluginConfig": {"schemaVersion": 2}}
    })
}

#[tokio::test]
async fn the_wasmplugin_is_server_side_applied_by_field_manager_attache_with_force() {
    let (client, handle) = mock();
    let server = serve(handle, |mut handle| async move {
        let (seen, send) = next(&mut handle, "the WasmPlugin's apply").await;
        // Server-side apply is a PATCH with content type
        // application/apply-patch+yaml to the object's own path; the
        // fieldManager query parameter is required for it, and force=true
        // takes fields over from other managers (server-side apply docs,
        // "Conflicts": "controllers ... should set force").
        assert_eq!(seen.method, Method::PATCH);
        assert_eq!(
            seen.path,
            "/apis/extensions.istio.io/v1alpha1/namespaces/infra/wasmplugins/attache-edge"
        );
        assert_eq!(
            seen.query.get("fieldManager").map(String::as_str),
            Some("attache")
        );
        assert_eq!(seen.query.get("force").map(String::as_str), Some("true"));
        assert_eq!(seen.content_type, "application/apply-patch+yaml");
        // The body is the whole intent (JSON is YAML): apiVersion, kind,
        // name and the fields we own, and no last-applied annotation.
        assert_eq!(seen.body, plugin());
        respond(send, 200, &plugin());
        ((), handle)
    });
    let applied = within("apply_plugin", apply_plugin(&client, &plugin())).await;
    server.finish().await;
    applied.unwrap();
}

#[tokio::test]
async fn a_403_names_the_missing_permission() {
    let (client, handle) = mock();
    let server = serve(handle, |mut handle| async move {
        let (_, send) = next(&mut handle, "the WasmPlugin's apply").await;
        // API conventions, "HTTP Status codes": 403 Forbidden, the request
        // is understood but the caller may not do it (RBAC).
        respond(send, 403, &status(403, "Forbidden", "wasmplugins.extensions.istio.io \"attache-edge\" is forbidden: User \"system:serviceaccount:attache-system:attache\" cannot patch resource"));
        ((), handle)
    });
    let err = within("apply_plugin", apply_plugin(&client, &plugin()))
        .await
        .unwrap_err();
    server.finish().await;
    assert!(matches!(err, WriteError::Forbidden { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("WasmPlugin infra/attache-edge: forbidden by RBAC"),
        "{text}"
    );
    assert!(
        text.contains("cannot patch resource") && text.contains("hint: deploy/controller"),
        "{text}"
    );
}

#[tokio::test]
async fn a_wasmplugin_whose_gateway_left_our_class_is_deleted_and_a_404_is_done() {
    let (client, handle) = mock();
    let key = ObjectKey {
        namespace: "infra".into(),
        name: "attache-edge".into(),
    };
    let path = "/apis/extensions.istio.io/v1alpha1/namespaces/infra/wasmplugins/attache-edge";
    let server = serve(handle, |mut handle| async move {
        let (seen, send) = next(&mut handle, "the DELETE").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (Method::DELETE, path)
        );
        respond(send, 200, &plugin());
        // Already gone (API conventions, "HTTP Status codes": 404): the
        // goal is met, not an error.
        let (seen, send) = next(&mut handle, "the second DELETE").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (Method::DELETE, path)
        );
        respond(
            send,
            404,
            &status(
                404,
                "NotFound",
                "wasmplugins.extensions.istio.io \"attache-edge\" not found",
            ),
        );
        ((), handle)
    });
    let first = within("delete_plugin", delete_plugin(&client, &WASM_PLUGIN, &key)).await;
    let second = within(
        "delete_plugin again",
        delete_plugin(&client, &WASM_PLUGIN, &key),
    )
    .await;
    server.finish().await;
    first.unwrap();
    second.unwrap();
}

#[tokio::test]
async fn a_missing_lease_is_created_holding_it() {
    let (client, handle) = mock();
    let lock = LeaseLock::new(client, DEFAULT_NAMESPACE, "attache-controller", "replica-a");
    let path = "/apis/coordination.k8s.io/v1/namespaces/attache-system/leases";
    let server = serve(handle, |mut handle| async move {
        let (seen, send) = next(&mut handle, "the Lease's GET").await;
        assert_eq!(seen.path, format!("{path}/attache-controller"));
        respond(
            send,
            404,
            &status(
                404,
                "NotFound",
                "leases.coordination.k8s.io \"attache-controller\" not found",
            ),
        );
        // Created by a POST to the collection (API conventions, "create").
        let (seen, send) = next(&mut handle, "the Lease's creation (POST)").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (Method::POST, path)
        );
        assert_eq!(seen.body["metadata"]["name"], "attache-controller");
        assert_eq!(seen.body["spec"]["holderIdentity"], "replica-a");
        assert_eq!(seen.body["spec"]["leaseDurationSeconds"], 15);
        let created = seen.body.clone();
        respond(send, 201, &created);
        ((), handle)
    });
    let now = "2026-11-26T07:00:10Z".parse().unwrap();
    let held = within("the Lease round", lock.try_acquire(now)).await;
    server.finish().await;
    assert!(held.unwrap(), "the replica that created the Lease holds it");
}

fn ours(name: &str) -> Value {
    json!({"ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name, "namespace": "infra"},
           "controllerName": "policy.attache.dev/attache",
           "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "m", "lastTransitionTime": "2026-11-26T07:00:00Z"}]})
}

fn theirs() -> Value {
    json!({"ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "other", "namespace": "infra"},
           "controllerName": "example.com/other", "conditions": []})
}

#[tokio::test]
async fn a_409_on_status_reads_again_and_keeps_the_other_controllers_entries() {
    let (client, handle) = mock();
    let kind: &'static WatchedKind = named("RoutePolicy").unwrap();
    let key = ObjectKey {
        namespace: "infra".into(),
        name: "edge-defaults".into(),
    };
    let new_status = json!({"conditions": [], "ancestors": [ours("edge")]});
    let server = serve(handle, |mut handle| async move {
        let (seen, send) = next(&mut handle, "the status write").await;
        // Status is written through the status subresource (API conventions,
        // "Spec and Status": "/status ... subresource"), as a JSON merge
        // patch carrying the resourceVersion it was computed from: the
        // server refuses it with 409 Conflict if the object changed since
        // ("Concurrency Control and Consistency").
        assert_eq!(seen.method, Method::PATCH);
        assert_eq!(
            seen.path,
            "/apis/policy.attache.dev/v1alpha1/namespaces/infra/routepolicies/edge-defaults/status"
        );
        assert_eq!(seen.content_type, "application/merge-patch+json");
        assert_eq!(seen.body["metadata"]["resourceVersion"], "5");
        assert_eq!(seen.body["status"]["ancestors"], json!([ours("edge")]));
        respond(send, 409, &status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again"));
        // Read again...
        let (seen, send) = next(&mut handle, "the GET after the 409").await;
        assert_eq!(seen.method, Method::GET);
        assert_eq!(
            seen.path,
            "/apis/policy.attache.dev/v1alpha1/namespaces/infra/routepolicies/edge-defaults"
        );
        respond(
            send,
            200,
            &json!({
                "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
                "metadata": {"name": "edge-defaults", "namespace": "infra", "resourceVersion": "6"},
                "spec": {}, "status": {"ancestors": [theirs()]}
            }),
        );
        // ...and write again at the new version, the other controller's
        // ancestor kept (GEP-713: each controller owns its own entries).
        let (seen, send) = next(&mut handle, "the status write at the new version").await;
        assert_eq!(seen.method, Method::PATCH);
        assert_eq!(seen.content_type, "application/merge-patch+json");
        assert_eq!(seen.body["metadata"]["resourceVersion"], "6");
        assert_eq!(
            seen.body["status"]["ancestors"],
            json!([theirs(), ours("edge")])
        );
        respond(
            send,
            200,
            &json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy", "metadata": {"name": "edge-defaults", "namespace": "infra", "resourceVersion": "7"}}),
        );
        ((), handle)
    });
    let metrics = Metrics::default();
    let written = within(
        "write_status",
        write_status(&client, &metrics, kind, &key, "5", &new_status),
    )
    .await;
    server.finish().await;
    written.unwrap();
    // Both PATCHes are counted: the one refused with 409 and the retry.
    assert_eq!(metrics.writes(Write::Status), 2);
}

fn gateway_class(rv: &str) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
           "metadata": {"name": "istio", "resourceVersion": rv, "uid": "c1"},
           "spec": {"controllerName": "istio.io/gateway-controller"}})
}

fn list(rv: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClassList",
           "metadata": {"resourceVersion": rv}, "items": items})
}

/// Answers a watch with these events, one JSON object per line, then ends
/// the response (the server closing a watch, e.g. at timeoutSeconds).
fn respond_events(send: tower_test::mock::SendResponse<Response<Body>>, events: &[Value]) {
    let mut body = Vec::new();
    for e in events {
        body.extend(serde_json::to_vec(e).unwrap());
        body.push(b'\n');
    }
    send.send_response(
        Response::builder()
            .status(200)
            .body(Body::from(body))
            .unwrap(),
    );
}

#[tokio::test]
async fn a_watch_that_ends_resumes_and_a_410_gone_lists_again() {
    let (client, mut handle) = mock();
    let kind: &'static WatchedKind = named("GatewayClass").unwrap();
    let shared = Arc::new(CacheSync::default());
    let (reader, writer) = watch::store(kind);
    let task = tokio::spawn(watch::run(client, kind, writer, shared.clone()));
    let path = "/apis/gateway.networking.k8s.io/v1/gatewayclasses";

    // 1. A list first (API conventions, "Lists and Simple kinds"; the
    //    watch starts from the list's resourceVersion), in pages.
    let (seen, send) = next(&mut handle, "1. the first list").await;
    assert_eq!(
        (seen.method.clone(), seen.path.as_str()),
        (Method::GET, path)
    );
    assert!(!seen.query.contains_key("watch"), "{:?}", seen.query);
    assert_eq!(seen.query.get("limit").map(String::as_str), Some("500"));
    respond(send, 200, &list("10", vec![]));

    // 2. The watch from that version ("Efficient detection of changes":
    //    watch=true&resourceVersion=N sends every change after N).
    let (seen, send) = next(&mut handle, "2. the watch from the list's version").await;
    assert_eq!(seen.path, path);
    assert_eq!(seen.query.get("watch").map(String::as_str), Some("true"));
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("10")
    );
    respond_events(
        send,
        &[json!({"type": "ADDED", "object": gateway_class("11")})],
    );

    // 3. The watch ended: it resumes from the last version seen, no relist.
    let (seen, send) = next(&mut handle, "3. the watch resumed after it ended").await;
    assert_eq!(seen.query.get("watch").map(String::as_str), Some("true"));
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("11")
    );
    assert_eq!(reader.state().len(), 1, "the ADDED object is in the store");
    assert!(shared.ready(1), "the kind counts as synced");
    // 4. 410 Gone: the version is too old ("resourceVersion ... expired"),
    //    sent as an ERROR event carrying a Status.
    respond_events(
        send,
        &[
            json!({"type": "ERROR", "object": status(410, "Expired", "too old resource version: 11 (99)")}),
        ],
    );

    // 5. A fresh list, not a watch.
    let (seen, send) = next(&mut handle, "5. the list after the 410").await;
    assert_eq!(seen.path, path);
    assert!(
        !seen.query.contains_key("watch"),
        "a 410 must be followed by a list: {:?}",
        seen.query
    );
    respond(send, 200, &list("100", vec![]));
    let (seen, _send) = next(&mut handle, "6. the watch from the new list's version").await;
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("100")
    );
    // The relist found nothing: the store says so.
    assert_eq!(reader.state().len(), 0);
    task.abort();
}

/// Our own status write coming back through the watch (same generation,
/// labels and annotations) updates the store but wakes no round; a spec
/// change (a new generation) or a label does.
#[tokio::test]
async fn a_status_only_change_of_our_policy_wakes_no_round() {
    use futures::FutureExt;
    let (client, mut handle) = mock();
    let kind: &'static WatchedKind = named("RoutePolicy").unwrap();
    let shared = Arc::new(CacheSync::default());
    let (reader, writer) = watch::store(kind);
    let task = tokio::spawn(watch::run(client, kind, writer, shared.clone()));
    let policy = |rv: &str, generation: u64, labels: Value, status: Value| {
        json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
               "metadata": {"name": "p", "namespace": "shop", "uid": "p1", "resourceVersion": rv,
                            "generation": generation, "labels": labels},
               "spec": {"targetRefs": []}, "status": status})
    };
    let (_, send) = next(&mut handle, "the list").await;
    respond(
        send,
        200,
        &json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicyList",
                "metadata": {"resourceVersion": "10"}, "items": [policy("10", 1, json!({}), json!({}))]}),
    );
    let (_, send) = next(&mut handle, "the watch").await;
    within("the wake-up of the first sync", shared.changed.notified()).await;
    let written = json!({"conditions": [{"type": "Accepted", "status": "True"}]});
    respond_events(
        send,
        &[json!({"type": "MODIFIED", "object": policy("11", 1, json!({}), written.clone())})],
    );
    let (_, send) = next(&mut handle, "the watch resumed").await;
    assert_eq!(
        read_doc(&reader.state()[0])["status"],
        written,
        "the store has the status"
    );
    assert!(
        shared.changed.notified().now_or_never().is_none(),
        "a status-only change woke a round"
    );
    respond_events(
        send,
        &[
            json!({"type": "MODIFIED", "object": policy("12", 1, json!({"team": "a"}), written.clone())}),
        ],
    );
    let (_, send) = next(&mut handle, "the watch resumed again").await;
    within("the wake-up of a label change", shared.changed.notified()).await;
    respond_events(
        send,
        &[json!({"type": "MODIFIED", "object": policy("13", 2, json!({"team": "a"}), written)})],
    );
    let (_, _send) = next(&mut handle, "the watch resumed a third time").await;
    within("the wake-up of a spec change", shared.changed.notified()).await;
    task.abort();
}

/// A transient failure (a 500 on the watch, then a 429) is not a reason to
/// list again: kube-runtime's watcher, kept across errors, resumes from the
/// last resourceVersion after its back-off, keeps the store, and counts
/// each restart.
#[tokio::test(start_paused = true)]
async fn a_transient_watch_error_resumes_from_the_last_version_without_a_relist() {
    use attache_controller::kube::metrics::Metrics;
    let (client, mut handle) = mock();
    let kind: &'static WatchedKind = named("GatewayClass").unwrap();
    let metrics = Arc::new(Metrics::default());
    let shared = Arc::new(CacheSync::new(metrics.clone(), 1));
    let (reader, writer) = watch::store(kind);
    let task = tokio::spawn(watch::run(client, kind, writer, shared.clone()));
    let (_, send) = next(&mut handle, "the first list").await;
    respond(send, 200, &list("10", vec![gateway_class("10")]));
    let (seen, send) = next(&mut handle, "the watch").await;
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("10")
    );
    respond(send, 500, &status(500, "InternalError", "etcd is sad"));
    let (seen, send) = next(&mut handle, "the watch again after the 500").await;
    assert_eq!(
        seen.query.get("watch").map(String::as_str),
        Some("true"),
        "no relist"
    );
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("10")
    );
    respond(send, 429, &status(429, "TooManyRequests", "slow down"));
    let (seen, _send) = next(&mut handle, "the watch again after the 429").await;
    assert_eq!(
        seen.query.get("watch").map(String::as_str),
        Some("true"),
        "no relist"
    );
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("10")
    );
    assert_eq!(reader.state().len(), 1, "the store kept its object");
    assert!(metrics
        .render()
        .lines()
        .any(|l| l == "attache_watch_restarts_total{kind=\"GatewayClass\",reason=\"Other\"} 2"));
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_kind_whose_crd_is_not_installed_is_skipped_then_picked_up() {
    let (client, mut handle) = mock();
    let kind: &'static WatchedKind = named("TrafficPolicy").unwrap();
    let shared = Arc::new(CacheSync::default());
    let (reader, writer) = watch::store(kind);
    let task = tokio::spawn(watch::run(client, kind, writer, shared.clone()));
    let path = "/apis/gateway.kgateway.dev/v1alpha1/trafficpolicies";
    let (seen, send) = next(&mut handle, "the first list").await;
    assert_eq!(seen.path, path);
    // A group/version the server does not serve is a 404 (API conventions,
    // "HTTP Status codes": 404 StatusNotFound).
    respond(
        send,
        404,
        &status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
    );
    // Skipped: the cache counts as whole without it, no crash.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    while !shared.missing().contains("TrafficPolicy") && tokio::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    assert!(shared.missing().contains("TrafficPolicy"));
    assert!(shared.ready(1));
    // Looked for again after MISSING_RETRY (time is paused and advances
    // on its own while every task waits).
    let (seen, send) = next_within(
        &mut handle,
        "the list again after MISSING_RETRY (virtual time)",
        watch::MISSING_RETRY + STEP,
    )
    .await;
    assert_eq!(seen.path, path);
    assert!(!seen.query.contains_key("watch"));
    respond(
        send,
        200,
        &json!({"apiVersion": "gateway.kgateway.dev/v1alpha1", "kind": "TrafficPolicyList", "metadata": {"resourceVersion": "3"}, "items": [
            {"apiVersion": "gateway.kgateway.dev/v1alpha1", "kind": "TrafficPolicy", "metadata": {"name": "t", "namespace": "shop", "resourceVersion": "3", "uid": "t1"}, "spec": {}}
        ]}),
    );
    let (seen, _send) = next(&mut handle, "the watch from the list's version").await;
    assert_eq!(
        seen.query.get("resourceVersion").map(String::as_str),
        Some("3")
    );
    assert!(
        !shared.missing().contains("TrafficPolicy"),
        "picked up when it appears"
    );
    assert_eq!(reader.state().len(), 1);
    task.abort();
}

/// An Istio-only cluster: kgateway's CRDs never appear. Each probe is one
/// list that gets a 404; none of them wakes the reconciler (no round, so no
/// writes) or claims the kind is served, and the probes grow further apart.
#[tokio::test(start_paused = true)]
async fn a_kind_that_stays_missing_wakes_no_round_and_is_probed_less_often() {
    use futures::FutureExt;
    let (client, mut handle) = mock();
    let kind: &'static WatchedKind = named("TrafficPolicy").unwrap();
    let shared = Arc::new(CacheSync::default());
    let (_reader, writer) = watch::store(kind);
    let task = tokio::spawn(watch::run(client, kind, writer, shared.clone()));
    let not_found = || {
        status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let (_, send) = next(&mut handle, "the first list").await;
    respond(send, 404, &not_found());
    // The first 404 is news: the cache is whole without the kind, one round.
    within("the wake-up of the first 404", shared.changed.notified()).await;
    let mut probed = tokio::time::Instant::now();
    let mut expected = watch::MISSING_RETRY;
    for probe in 1..=4 {
        let step = format!("probe {probe}");
        let (seen, send) = next_within(&mut handle, &step, watch::MISSING_RETRY_MAX + STEP).await;
        let waited = probed.elapsed();
        probed = tokio::time::Instant::now();
        assert!(!seen.query.contains_key("watch"), "{step}: a list");
        assert!(
            waited >= expected && waited < expected + Duration::from_secs(1),
            "{step}: waited {waited:?}, expected {expected:?}"
        );
        assert!(
            shared.missing().contains("TrafficPolicy"),
            "{step}: never claimed served"
        );
        respond(send, 404, &not_found());
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            shared.changed.notified().now_or_never().is_none(),
            "{step}: a 404 that changed nothing woke the reconciler"
        );
        expected = (expected * 2).min(watch::MISSING_RETRY_MAX);
    }
    task.abort();
}

fn lease(holder: &str, renewed: &str, rv: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": "attache-controller", "namespace": "attache-system", "resourceVersion": rv},
           "spec": {"holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": 15}})
}

#[tokio::test]
async fn a_lost_lease_stops_the_writes() {
    let (client, handle) = mock();
    let lock = LeaseLock::new(client, "attache-system", "attache-controller", "replica-a");
    let path = "/apis/coordination.k8s.io/v1/namespaces/attache-system/leases/attache-controller";
    let server = serve(handle, |mut handle| async move {
        // Round 1: we hold it; renewing is a PUT (replace) carrying the
        // resourceVersion read (API conventions, "Concurrency Control and
        // Consistency"), and the other replica wrote first: 409.
        let (seen, send) = next(&mut handle, "the Lease's GET").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (Method::GET, path)
        );
        respond(
            send,
            200,
            &lease("replica-a", "2026-11-26T07:00:00.000000Z", "41"),
        );
        let (seen, send) = next(&mut handle, "the Lease's renewal (PUT)").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (Method::PUT, path)
        );
        assert_eq!(seen.body["metadata"]["resourceVersion"], "41");
        assert_eq!(seen.body["spec"]["holderIdentity"], "replica-a");
        respond(
            send,
            409,
            &status(409, "Conflict", "the object has been modified"),
        );
        // Round 2: the Lease now names replica-b, renewed just now: we
        // follow, and write nothing.
        let (seen, send) = next(&mut handle, "the Lease's GET in round 2").await;
        assert_eq!(seen.method, Method::GET);
        respond(
            send,
            200,
            &lease("replica-b", "2026-11-26T07:00:09.000000Z", "42"),
        );
        ((), handle)
    });
    let now = "2026-11-26T07:00:10Z".parse().unwrap();
    let first = within("round 1 of the Lease", lock.try_acquire(now)).await;
    let second = within("round 2 of the Lease", lock.try_acquire(now)).await;
    server.finish().await;
    assert!(!first.unwrap(), "a 409 on renew means the Lease is lost");
    assert!(!second.unwrap(), "another holder, still renewing");
}

mod common;

/// The status subresource of every policy of ours in `objects` (every
/// RoutePolicy and ClusterRoutePolicy of examples/shop): where the
/// controller writes status (API conventions, "Spec and Status").
fn status_paths(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .filter_map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap();
            let base = "/apis/policy.attache.dev/v1alpha1";
            match o["kind"].as_str().unwrap() {
                "RoutePolicy" => {
                    let ns = o["metadata"]["namespace"].as_str().unwrap();
                    Some(format!(
                        "{base}/namespaces/{ns}/routepolicies/{name}/status"
                    ))
                }
                "ClusterRoutePolicy" => Some(format!("{base}/clusterroutepolicies/{name}/status")),
                _ => None,
            }
        })
        .collect()
}

fn shop_snapshot(objects: &[Value]) -> attache_controller::snapshot::Snapshot {
    let rows = objects
        .iter()
        .map(|v| (named(v["kind"].as_str().unwrap()).unwrap(), v));
    attache_controller::snapshot::Snapshot::from_objects(rows, Default::default())
}

fn shop_config() -> attache_controller::reconcile::Config {
    // examples/shop's class is Istio's, the default --controller-name.
    attache_controller::reconcile::Config::default()
}

/// Answers one status write per path of `expected`, in any order; returns
/// what was written, by path.
async fn answer_status_writes(
    handle: &mut Handle,
    expected: &BTreeSet<String>,
    round: &str,
) -> BTreeMap<String, Value> {
    let mut writes = BTreeMap::new();
    for n in 1..=expected.len() {
        let step = format!("{round}: status write {n} of {}", expected.len());
        let (seen, send) = next(handle, &step).await;
        assert_eq!(seen.method, Method::PATCH, "{step}");
        assert_eq!(seen.content_type, "application/merge-patch+json", "{step}");
        assert!(
            expected.contains(&seen.path),
            "{step}: {} is not the status of a policy of ours",
            seen.path
        );
        respond(send, 200, &json!({"metadata": {"resourceVersion": "2"}}));
        let before = writes.insert(seen.path.clone(), seen.body["status"].clone());
        assert!(before.is_none(), "{step}: {} written twice", seen.path);
    }
    writes
}

#[tokio::test]
async fn a_round_applies_the_plugin_then_writes_status_and_a_settled_round_writes_nothing() {
    use attache_controller::kube::{metrics::Metrics, Reconciler};
    let (client, handle) = mock();
    let mut objects = common::shop();
    let expected = status_paths(&objects);
    assert!(expected.len() >= 8, "examples/shop has its policies");
    let mut reconciler = Reconciler::new(
        client,
        shop_config(),
        Arc::new(Metrics::default()),
        "replica-a",
    );
    let snapshot = shop_snapshot(&objects);
    let paths = expected.clone();
    let server = serve(handle, |mut handle| async move {
        let (seen, send) = next(&mut handle, "round 1: the WasmPlugin's apply").await;
        assert_eq!(seen.method, Method::PATCH);
        assert_eq!(seen.content_type, "application/apply-patch+yaml");
        assert_eq!(
            seen.path,
            "/apis/extensions.istio.io/v1alpha1/namespaces/infra/wasmplugins/attache-edge"
        );
        let applied = seen.body.clone();
        respond(send, 200, &applied);
        // Then the status of every policy of ours, once each.
        let writes = answer_status_writes(&mut handle, &paths, "round 1").await;
        ((applied, writes), handle)
    });
    let round = within(
        "round 1 to end",
        reconciler.apply(&snapshot, "2026-11-26T07:00:00Z".parse().unwrap()),
    )
    .await;
    let ((applied, writes), mut handle) = server.finish().await;
    assert_eq!(
        (round.applied, round.statuses, round.errors),
        (1, expected.len(), 0)
    );
    // The cluster now holds what was written; a round (or a restart) on it
    // sends no request at all.
    let mut live = applied.clone();
    live["metadata"]["resourceVersion"] = json!("9");
    objects.push(live);
    for (path, status) in writes {
        let mut parts = path.trim_end_matches("/status").rsplit('/');
        let (name, plural) = (parts.next().unwrap(), parts.next().unwrap());
        let kind = if plural == "routepolicies" {
            "RoutePolicy"
        } else {
            "ClusterRoutePolicy"
        };
        let o = objects
            .iter_mut()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap();
        o["status"] = status;
    }
    let settled = shop_snapshot(&objects);
    let second = reconciler.apply(&settled, "2026-11-26T08:00:00Z".parse().unwrap());
    // A write would reach the mock before the round ends.
    let round = within("the settled round to end", async {
        tokio::select! {
            round = second => round,
            request = handle.next_request() => {
                let (request, _) = request.unwrap();
                panic!("a settled round wrote: {} {}", request.method(), request.uri());
            }
        }
    })
    .await;
    assert_eq!(
        (round.applied, round.unchanged, round.statuses, round.errors),
        (0, 1, 0, 0)
    );
}

#[tokio::test]
async fn a_gateway_that_cannot_be_configured_keeps_its_plugin_and_gets_one_event() {
    use attache_controller::kube::{metrics::Metrics, Reconciler};
    let (client, handle) = mock();
    let objects = common::shop();
    let expected = status_paths(&objects);
    let mut reconciler = Reconciler::new(
        client,
        shop_config(),
        Arc::new(Metrics::default()),
        "replica-a",
    );
    let rows = objects
        .iter()
        .map(|v| (named(v["kind"].as_str().unwrap()).unwrap(), v));
    let missing = ["WasmPlugin"].into_iter().collect();
    let snapshot = attache_controller::snapshot::Snapshot::from_objects(rows, missing);
    let paths = expected.clone();
    let server = serve(handle, |mut handle| async move {
        // No apply: an Event on the Gateway (events.k8s.io/v1), Warning.
        let (seen, send) = next(&mut handle, "round 1: the Event").await;
        assert_eq!(
            (seen.method.clone(), seen.path.as_str()),
            (
                Method::POST,
                "/apis/events.k8s.io/v1/namespaces/infra/events"
            )
        );
        assert_eq!(seen.body["type"], "Warning");
        assert_eq!(seen.body["reason"], "ConfigurationKept");
        assert_eq!(seen.body["regarding"]["name"], "edge");
        assert!(seen.body["note"]
            .as_str()
            .unwrap()
            .contains("last applied WasmPlugin is kept"));
        respond(send, 201, &seen.body);
        // Status still written: Programmed False with why.
        let writes = answer_status_writes(&mut handle, &paths, "round 1").await;
        (writes, handle)
    });
    let round = within(
        "round 1 to end",
        reconciler.apply(&snapshot, "2026-11-26T07:00:00Z".parse().unwrap()),
    )
    .await;
    let (writes, handle) = server.finish().await;
    assert_eq!(
        (round.applied, round.kept, round.statuses),
        (0, 1, expected.len())
    );
    let pending = writes
        .values()
        .flat_map(|s| s["ancestors"].as_array().cloned().unwrap_or_default())
        .flat_map(|a| a["conditions"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "Programmed")
        .collect::<Vec<_>>();
    assert!(!pending.is_empty(), "accepted ancestors say Programmed");
    for c in &pending {
        assert_eq!(c["status"], "False", "{c}");
        assert!(
            c["message"].as_str().unwrap().contains("WasmPlugin CRD"),
            "{c}"
        );
    }
    // The same failure next round: no second Event. The mock did not store
    // the status, so the status writes repeat.
    let paths = expected.clone();
    let again = serve(handle, |mut handle| async move {
        let writes = answer_status_writes(&mut handle, &paths, "round 2 (no Event)").await;
        (writes, handle)
    });
    let round = within(
        "round 2 to end",
        reconciler.apply(&snapshot, "2026-11-26T07:00:05Z".parse().unwrap()),
    )
    .await;
    again.finish().await;
    assert_eq!(
        (round.kept, round.statuses, round.errors),
        (1, expected.len(), 0)
    );
}

/// The document a watcher's store keeps of an input object: what it read
/// when the object arrived.
fn read_doc(watched: &watch::Watched) -> Value {
    let read = watched.read.clone().expect("an input kind is read");
    let (object, _) = read.expect("readable").expect("an object");
    object.doc.value.clone()
}
