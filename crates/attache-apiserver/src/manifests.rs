//! Reading YAML manifests (files or directories of `.yaml`, `.yml` and
//! `.json`, several documents each, `kind: List` expanded) and seeding them:
//! a CustomResourceDefinition registers its kind, any other object is
//! created or replaced, its `status` kept, its namespace created if missing.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ApiError, LoadError};
use crate::state::State;
use crate::write::Request;

/// The manager seeded objects are written by.
pub const SEED_MANAGER: &str = "attache-apiserver-seed";

/// Every object of a file or, for a directory, of its files in name order.
pub fn read(path: &Path) -> Result<Vec<Value>, LoadError> {
    let shown = path.display().to_string();
    let read_error = |source| LoadError::Read {
        path: shown.clone(),
        source,
    };
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
            })
            .collect();
        files.sort();
        let mut out = Vec::new();
        for file in files {
            out.extend(read(&file)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(path).map_err(read_error)?;
    parse(&text).map_err(|source| LoadError::Yaml {
        path: shown,
        source,
    })
}

/// Every object of a YAML text.
pub fn parse(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let mut out = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document)?;
        match value {
            Value::Null => {}
            Value::Object(_) if value["kind"] == "List" => {
                out.extend(value["items"].as_array().cloned().unwrap_or_default());
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

impl State {
    /// Creates or replaces `object`, keeping its status.
    pub fn seed(&mut self, object: Value) -> Result<Arc<Value>, LoadError> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind_name = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let what = format!("{kind_name} {name}");
        let refused = |source: ApiError| LoadError::Refused {
            what: what.clone(),
            source,
        };
        let (kind, version) =
            self.kinds
                .by_type(api_version, kind_name)
                .ok_or_else(|| LoadError::Invalid {
                    what: what.clone(),
                    message: format!(
                        "{api_version} {kind_name} is not served (add its CRD or KindSpec)"
                    ),
                })?;
        let namespace = if kind.namespaced {
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        if kind.namespaced && self.store.get("/namespaces", "", &namespace).is_none() {
            self.seed(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            )?;
        }
        let mut req = Request {
            kind: kind.clone(),
            version: &version,
            namespace: &namespace,
            name: Some(&name),
            subresource: "",
            manager: SEED_MANAGER,
        };
        let mut body = object.clone();
        let exists = self.store.get(&kind.resource(), &namespace, &name);
        let mut written = match exists {
            Some(old) => {
                body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
                self.update(&req, body.clone())
            }
            None => self.create(&req, body.clone()),
        }
        .map_err(refused)?;
        if kind.status_subresource
            && body.get("status").is_some()
            && kind.plural != "customresourcedefinitions"
        {
            req.subresource = "status";
            body["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"].clone();
            written = self.update(&req, body).map_err(refused)?;
        }
        Ok(written)
    }
}
