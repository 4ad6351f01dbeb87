//! The writes: create (POST), update (PUT), merge patch, server-side apply
//! and delete, on the main resource or the `status` subresource. The rules
//! (api-conventions.md, "Spec and Status", "Metadata", "Concurrency Control
//! and Consistency"):
//! - a body carrying a `metadata.resourceVersion` that is not current is a
//!   409 Conflict; a custom resource's PUT must carry one (422);
//! - with the status subresource, a main-resource write never changes
//!   `status` and a status write changes nothing but `status`;
//! - `metadata.generation` starts at 1 and grows only when something other
//!   than `metadata` (and `status`, with the subresource) changes;
//! - a write that changes nothing is not stored: no new resourceVersion, no
//!   watch event;
//! - the object is pruned with its version's schema on every write.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::apply::{self, Writer};
use crate::error::ApiError;
use crate::kinds::KindSpec;
use crate::state::State;

/// What a write addresses.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub kind: Arc<KindSpec>,
    pub version: &'a str,
    /// `""` for a cluster-scoped kind.
    pub namespace: &'a str,
    /// `None` on create (the name is the body's).
    pub name: Option<&'a str>,
    /// `""` or `"status"`.
    pub subresource: &'a str,
    pub manager: &'a str,
}

impl Request<'_> {
    fn writer<'a>(&'a self, api_version: &'a str, now: &'a str) -> Writer<'a> {
        Writer {
            manager: self.manager,
            subresource: self.subresource,
            api_version,
            now,
        }
    }
}

/// The time of a write, to the second (RFC 3339, as the API server writes it).
pub fn now() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl State {
    /// POST: a new object.
    pub fn create(&mut self, req: &Request<'_>, mut body: Value) -> Result<Arc<Value>, ApiError> {
        check_identity(req, &body)?;
        let mut name = text(&body, "/metadata/name").to_string();
        if name.is_empty() {
            let prefix = text(&body, "/metadata/generateName").to_string();
            if prefix.is_empty() {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
            let uid = self.store.uid();
            name = format!("{prefix}{}", &uid[uid.len() - 5..]);
        }
        if self
            .store
            .get(&req.kind.resource(), req.namespace, &name)
            .is_some()
        {
            return Err(ApiError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", req.kind.qualified()),
            ));
        }
        self.check_namespace(req)?;
        if let Some(meta) = body["metadata"].as_object_mut() {
            for k in [
                "managedFields",
                "deletionTimestamp",
                "uid",
                "creationTimestamp",
            ] {
                meta.remove(k);
            }
        }
        if req.kind.status_subresource {
            strip(&mut body, "status");
        }
        let req = Request {
            name: Some(&name),
            ..req.clone()
        };
        self.finish(&req, None, body, true)
    }

    /// PUT: replaces the object (or its status).
    pub fn update(&mut self, req: &Request<'_>, body: Value) -> Result<Arc<Value>, ApiError> {
        check_identity(req, &body)?;
        let old = self.current(req)?;
        if !crate::kinds::is_builtin(&req.kind)
            && text(&body, "/metadata/resourceVersion").is_empty()
        {
            // A custom resource's update is always conditional.
            return Err(ApiError::new(422, "Invalid", format!("{} \"{}\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update", req.kind.qualified(), req.name.unwrap_or_default())));
        }
        precondition(req, &old, &body)?;
        self.finish(req, Some(old), body, true)
    }

    /// PATCH `application/merge-patch+json`.
    pub fn merge(&mut self, req: &Request<'_>, patch: &Value) -> Result<Arc<Value>, ApiError> {
        let old = self.current(req)?;
        precondition(req, &old, patch)?;
        let mut candidate = (*old).clone();
        apply::merge_patch(&mut candidate, patch);
        check_identity(req, &candidate)?;
        self.finish(req, Some(old), candidate, true)
    }

    /// PATCH `application/apply-patch+yaml`: server-side apply.
    pub fn apply(
        &mut self,
        req: &Request<'_>,
        mut config: Value,
        force: bool,
    ) -> Result<Arc<Value>, ApiError> {
        check_identity(req, &config)?;
        let name = req.name.unwrap_or_default();
        let old = self.store.get(&req.kind.resource(), req.namespace, name);
        let live = match &old {
            Some(old) => {
                precondition(req, old, &config)?;
                (**old).clone()
            }
            None if req.subresource.is_empty() => {
                self.check_namespace(req)?;
                json!({"metadata": {"name": name, "namespace": req.namespace}})
            }
            None => return Err(ApiError::not_found(&req.kind.qualified(), name)),
        };
        if let Some(meta) = config["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        if req.subresource == "status" {
            config = json!({"status": config.get("status").cloned().unwrap_or(json!({}))});
        } else if req.kind.status_subresource {
            strip(&mut config, "status");
        }
        let (api_version, now) = (req.kind.api_version(req.version), now());
        let merged = apply::apply(&live, &config, &req.writer(&api_version, &now), force)?;
        self.finish(req, old, merged, false)
    }

    /// DELETE: removes the object, or marks it deleted while it has
    /// finalizers. `options` is the body's DeleteOptions, if any.
    pub fn delete(&mut self, req: &Request<'_>, options: &Value) -> Result<Arc<Value>, ApiError> {
        let old = self.current(req)?;
        let name = req.name.unwrap_or_default();
        let pre = &options["preconditions"];
        let stale = |field: &str, pointer: &str| {
            pre[field]
                .as_str()
                .is_some_and(|v| v != text(&old, pointer))
        };
        if stale("resourceVersion", "/metadata/resourceVersion") || stale("uid", "/metadata/uid") {
            return Err(ApiError::stale(&req.kind.qualified(), name));
        }
        let finalizers = old["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if finalizers {
            if old["metadata"].get("deletionTimestamp").is_some() {
                return Ok(old);
            }
            let mut marked = (*old).clone();
            marked["metadata"]["deletionTimestamp"] = json!(now());
            return Ok(self.store.put(&req.kind.resource(), marked));
        }
        let resource = req.kind.resource();
        let gone = self.store.remove(&resource, req.namespace, name);
        if req.kind.plural == "customresourcedefinitions" {
            self.crd_deleted(&old);
        }
        gone.ok_or_else(|| ApiError::not_found(&req.kind.qualified(), name))
    }

    fn current(&self, req: &Request<'_>) -> Result<Arc<Value>, ApiError> {
        let name = req.name.unwrap_or_default();
        self.store
            .get(&req.kind.resource(), req.namespace, name)
            .ok_or_else(|| ApiError::not_found(&req.kind.qualified(), name))
    }

    fn check_namespace(&self, req: &Request<'_>) -> Result<(), ApiError> {
        if self.require_namespaces
            && req.kind.namespaced
            && self.store.get("/namespaces", "", req.namespace).is_none()
        {
            return Err(ApiError::not_found("namespaces", req.namespace));
        }
        Ok(())
    }

    /// The common end of every write: the subresource rules, identity,
    /// generation, pruning, ownership, finalizers, the no-op check, the
    /// size limit, then the store.
    fn finish(
        &mut self,
        req: &Request<'_>,
        old: Option<Arc<Value>>,
        candidate: Value,
        record_update: bool,
    ) -> Result<Arc<Value>, ApiError> {
        let mut new = compose(req, old.as_deref(), candidate);
        if let Some(schema) = req.kind.schema(req.version) {
            crate::prune::prune(schema, &mut new);
            crate::fields::forget_missing(&mut new);
        }
        let api_version = req.kind.api_version(req.version);
        let now = now();
        if record_update {
            apply::record_update(old.as_deref(), &mut new, &req.writer(&api_version, &now));
        }
        set_generation(req, old.as_deref(), &mut new);
        if let Some(old) = &old {
            if unchanged(old, &new) {
                return Ok(old.clone());
            }
        } else {
            new["metadata"]["uid"] = json!(self.store.uid());
            new["metadata"]["creationTimestamp"] = json!(now);
        }
        let size = serde_json::to_vec(&new).map_or(0, |b| b.len());
        if size > self.max_object_bytes {
            return Err(ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!(
                    "etcdserver: request is too large ({size} bytes; the limit is {})",
                    self.max_object_bytes
                ),
            ));
        }
        let resource = req.kind.resource();
        let (namespace, name) = (req.namespace, req.name.unwrap_or_default());
        let deleted = new["metadata"].get("deletionTimestamp").is_some()
            && new["metadata"]["finalizers"]
                .as_array()
                .is_none_or(|f| f.is_empty());
        if deleted {
            return self
                .store
                .remove(&resource, namespace, name)
                .ok_or_else(|| ApiError::not_found(&req.kind.qualified(), name));
        }
        if req.kind.plural == "customresourcedefinitions" {
            self.crd_written(&mut new)?;
        }
        Ok(self.store.put(&resource, new))
    }
}

/// 400 when the body names another kind, version, name or namespace.
fn check_identity(req: &Request<'_>, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body is not a JSON or YAML object",
        ));
    }
    let kind = text(body, "/kind");
    let api_version = text(body, "/apiVersion");
    if (!kind.is_empty() && kind != req.kind.kind)
        || (!api_version.is_empty() && api_version != req.kind.api_version(req.version))
    {
        return Err(ApiError::bad_request(format!(
            "the object's type ({api_version}, {kind}) does not match the request's ({}, {})",
            req.kind.api_version(req.version),
            req.kind.kind
        )));
    }
    let name = text(body, "/metadata/name");
    if let Some(url_name) = req.name {
        if !name.is_empty() && name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({url_name})"
            )));
        }
    }
    let namespace = text(body, "/metadata/namespace");
    if !namespace.is_empty() && req.kind.namespaced && namespace != req.namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn precondition(req: &Request<'_>, old: &Value, body: &Value) -> Result<(), ApiError> {
    let wanted = text(body, "/metadata/resourceVersion");
    if !wanted.is_empty() && wanted != text(old, "/metadata/resourceVersion") {
        return Err(ApiError::stale(
            &req.kind.qualified(),
            req.name.unwrap_or_default(),
        ));
    }
    Ok(())
}

fn strip(object: &mut Value, field: &str) {
    if let Value::Object(map) = object {
        map.remove(field);
    }
}

/// The subresource rules and the identity fields.
fn compose(req: &Request<'_>, old: Option<&Value>, candidate: Value) -> Value {
    let mut new = match (old, req.subresource) {
        (Some(old), "status") => {
            let mut new = old.clone();
            match candidate.get("status") {
                Some(status) => new["status"] = status.clone(),
                None => strip(&mut new, "status"),
            }
            if let (Some(fields), Some(meta)) = (
                candidate["metadata"].get("managedFields"),
                new["metadata"].as_object_mut(),
            ) {
                meta.insert("managedFields".into(), fields.clone());
            }
            new
        }
        _ => {
            let mut new = candidate;
            if req.kind.status_subresource {
                match old.and_then(|o| o.get("status")) {
                    Some(status) => new["status"] = status.clone(),
                    None => strip(&mut new, "status"),
                }
            }
            new
        }
    };
    new["apiVersion"] = json!(req.kind.api_version(req.version));
    new["kind"] = json!(req.kind.kind);
    if !new["metadata"].is_object() {
        new["metadata"] = json!({});
    }
    let meta = &mut new["metadata"];
    meta["name"] = json!(req.name.unwrap_or_default());
    if req.kind.namespaced {
        meta["namespace"] = json!(req.namespace);
    } else if let Some(m) = meta.as_object_mut() {
        m.remove("namespace");
    }
    if let Some(old) = old {
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "deletionTimestamp",
        ] {
            match old["metadata"].get(k) {
                Some(v) => meta[k] = v.clone(),
                None => {
                    if let Some(m) = meta.as_object_mut() {
                        m.remove(k);
                    }
                }
            }
        }
    }
    new
}

/// `metadata.generation`: 1 on create, +1 when the spec (anything but
/// metadata, and status with the subresource) changes.
fn set_generation(req: &Request<'_>, old: Option<&Value>, new: &mut Value) {
    let spec_of = |o: &Value| {
        let mut o = o.clone();
        strip(&mut o, "metadata");
        if req.kind.status_subresource {
            strip(&mut o, "status");
        }
        o
    };
    let generation = match old {
        None => 1,
        Some(old) => {
            let before = old["metadata"]["generation"].as_i64().unwrap_or(1);
            if spec_of(old) == spec_of(new) {
                before
            } else {
                before + 1
            }
        }
    };
    new["metadata"]["generation"] = json!(generation);
}

/// Equal but for the managedFields' times.
fn unchanged(old: &Value, new: &Value) -> bool {
    let untimed = |o: &Value| {
        let mut o = o.clone();
        if let Some(entries) = o["metadata"]["managedFields"].as_array_mut() {
            for e in entries {
                strip(e, "time");
            }
        }
        o
    };
    untimed(old) == untimed(new)
}
