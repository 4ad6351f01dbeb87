//! The CRDs' schemas as tests/crds.rs and tests/crds_rules.rs check them:
//! the committed files, the OpenAPI schema as a JSON Schema, and a checker
//! that asks both the schema and the resolver about one policy.
//! Included with `#[path]` by those two test crates only (it needs
//! `jsonschema`, which the other users of tests/support do not).

// Each of the two crates uses its own subset.
#![allow(dead_code)]

use attache_core::source::{Origin, SourceDoc};
use serde_json::{json, Value};

use crate::support::workspace;

pub fn crd_files() -> Vec<(String, String)> {
    let dir = workspace().join("deploy/crds");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("deploy/crds exists")
        .map(|e| {
            let path = e.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("read CRD"))
        })
        .collect();
    files.sort();
    files
}

/// The CRD's schema for `kind`, as the committed file has it.
pub fn crd_schema(kind: &str) -> Value {
    for (_, yaml) in crd_files() {
        let crd: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        if crd["spec"]["names"]["kind"] == kind {
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
        }
    }
    panic!("no CRD for {kind}");
}

/// OpenAPI v3 (Kubernetes) to JSON Schema: unknown fields refused as
/// strict field validation does, `x-kubernetes-list-type: set` as unique
/// items. Not applied inside anyOf/not branches, which constrain the
/// fields of their parent rather than define an object.
pub fn json_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    let Some(object) = out.as_object_mut() else {
        return out;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for sub in properties.values_mut() {
            *sub = json_schema(sub);
        }
        if !object.contains_key("x-kubernetes-preserve-unknown-fields") {
            object.insert("additionalProperties".into(), json!(false));
        }
    }
    if let Some(items) = object.get_mut("items") {
        *items = json_schema(items);
    }
    if object.get("x-kubernetes-list-type") == Some(&json!("set")) {
        object.insert("uniqueItems".into(), json!(true));
    }
    out
}

pub struct Checker {
    pub kind: &'static str,
    validator: jsonschema::Validator,
    pub openapi: Value,
}

impl Checker {
    pub fn new(kind: &'static str) -> Checker {
        Checker::from_openapi(kind, crd_schema(kind))
    }

    /// A checker for a schema held outside deploy/crds: the part of
    /// another project's CRD our renders write, transcribed into
    /// tests/fixtures/schemas/.
    pub fn from_openapi(kind: &'static str, openapi: Value) -> Checker {
        let validator =
            jsonschema::validator_for(&json_schema(&openapi)).expect("a valid JSON Schema");
        Checker {
            kind,
            validator,
            openapi,
        }
    }

    pub fn schema_errors(&self, policy: &Value) -> Vec<String> {
        self.validator
            .iter_errors(policy)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// The `x-kubernetes-validations` rules that do not hold for `policy`,
    /// evaluated as an API server does: each rule with `self` bound to the
    /// value at its schema node (ref: Kubernetes "Validation rules",
    /// CustomResourceDefinition docs). A rule that does not compile or
    /// evaluate here counts as failing, so an unsupported function cannot
    /// pass unnoticed.
    pub fn cel_failures(&self, policy: &Value) -> Vec<String> {
        let mut failures = Vec::new();
        cel_walk(&self.openapi, policy, "", &mut failures);
        failures
    }

    /// What an API server with this CRD would store: the schema and every
    /// CEL rule hold.
    pub fn cluster_accepts(&self, policy: &Value) -> bool {
        self.schema_errors(policy).is_empty() && self.cel_failures(policy).is_empty()
    }

    pub fn resolver_accepts(&self, policy: &Value) -> bool {
        assert_eq!(policy["kind"], self.kind);
        let doc = SourceDoc {
            origin: Origin {
                file: "mutated.yaml".into(),
                document: 1,
                item: None,
            },
            value: policy.clone(),
        };
        let inputs = attache_core::parse(&[doc]);
        inputs.policies.len() == 1 && inputs.policies[0].is_valid()
    }
}

fn cel_walk(schema: &Value, value: &Value, at: &str, failures: &mut Vec<String>) {
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let text = rule["rule"].as_str().unwrap_or_default();
        match cel_holds(text, value) {
            Ok(true) => {}
            Ok(false) => failures.push(format!("{at}: {}", rule["message"])),
            Err(e) => failures.push(format!("{at}: rule {text:?} did not evaluate: {e}")),
        }
    }
    match value {
        Value::Object(map) => {
            for (key, sub) in map {
                if let Some(sub_schema) = schema["properties"].get(key) {
                    cel_walk(sub_schema, sub, &format!("{at}/{key}"), failures);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                cel_walk(&schema["items"], item, &format!("{at}/{i}"), failures);
            }
        }
        _ => {}
    }
}

fn cel_holds(rule: &str, value: &Value) -> Result<bool, String> {
    use cel::extractors::This;
    use std::sync::Arc;
    let program = cel::Program::compile(rule).map_err(|e| e.to_string())?;
    let mut context = cel::Context::default();
    // Kubernetes' strings extension; ASCII only, as its documentation says.
    context.add_function("lowerAscii", |This(s): This<Arc<String>>| {
        Arc::new(s.to_ascii_lowercase())
    });
    let bound = cel::to_value(value).map_err(|e| e.to_string())?;
    context.add_variable_from_value("self", bound);
    match program.execute(&context).map_err(|e| e.to_string())? {
        cel::Value::Bool(b) => Ok(b),
        other => Err(format!("not a boolean: {other:?}")),
    }
}

/// A RoutePolicy with every setting, valid for both.
pub fn base_route_policy() -> Value {
    json!({
        "apiVersion": "policy.attache.dev/v1alpha1",
        "kind": "RoutePolicy",
        "metadata": {"name": "p", "namespace": "shop"},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}],
            "defaults": {
                "timeouts": {"request": "10s", "backendRequest": "1m30s"},
                "retry": {"attempts": 10, "codes": [400, 599], "backoff": "100ms", "retryOn": ["5xx"]},
                "requestHeaderModifier": {"set": [{"name": "X-A", "value": "a b\tc"}], "add": [{"name": "x-b", "value": ""}], "remove": ["x-c"]},
                "responseHeaderModifier": {"remove": ["server"]}
            }
        }
    })
}

pub fn mutated(base: &Value, pointer: &str, value: Value) -> Value {
    let mut policy = base.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = policy
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{parent}"));
    match target {
        Value::Array(list) => list[key.parse::<usize>().unwrap()] = value,
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        _ => panic!("{pointer}"),
    }
    policy
}

pub const D: &str = "/spec/defaults";
