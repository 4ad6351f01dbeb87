//! Behaviour tests through the fake host: what a request looks like after
//! the filter, for documents written as JSON (the way Envoy hands them over).

mod config_errors;
mod contract;
mod dispatch;
mod enforcement;
mod envelope;
mod fallback_index;
mod fallback_precedence;
mod listener_ports;
mod lookup;
mod plugin_lifecycle;
mod robustness;
mod served;
mod stripping;
mod table;

use std::rc::Rc;

use attache_contract::DataPlaneDocument;
use serde_json::{json, Value};

use crate::config::CompiledConfig;
use crate::stream::Stream;
use crate::testing::FakeHost;

/// A schema-1 document around `routes`: the fixtures are written the way
/// people read policies; [`compile`] encodes them as `attache render` does.
pub fn doc(routes: Value) -> Value {
    json!({"schemaVersion": 1, "gateway": "infra/edge", "routes": routes})
}

/// A route entry with the given name and extra fields merged in.
pub fn entry(name: &str, extra: Value) -> Value {
    let mut e = json!({
        "name": name, "listener": "http", "routeNamespace": "shop",
        "routeName": name, "rule": "0"
    });
    if let (Some(base), Value::Object(more)) = (e.as_object_mut(), extra) {
        base.extend(more);
    }
    e
}

/// The bytes the filter is handed for `document`: a schema-1 fixture is
/// encoded through the contract's data-plane encoder (what `attache render`
/// writes); any other document goes over as it is.
pub fn filter_bytes(document: &Value) -> Vec<u8> {
    if document["schemaVersion"] == json!(attache_contract::SCHEMA_VERSION) {
        let resolved: attache_contract::Document =
            serde_json::from_value(document.clone()).expect("a well-formed schema-1 fixture");
        serde_json::to_vec(&DataPlaneDocument::encode(&resolved)).unwrap()
    } else {
        document.to_string().into_bytes()
    }
}

pub fn compile(document: &Value) -> Rc<CompiledConfig> {
    Rc::new(CompiledConfig::from_bytes(&filter_bytes(document)).unwrap())
}

/// The refusal of a schema-1 fixture, once encoded (see [`filter_bytes`]).
pub fn encoded_err(document: &Value) -> String {
    CompiledConfig::from_bytes(&filter_bytes(document))
        .unwrap_err()
        .to_string()
}

/// The refusal of `document` handed over as it is.
pub fn compile_err(document: &str) -> String {
    CompiledConfig::from_bytes(document.as_bytes())
        .unwrap_err()
        .to_string()
}

/// Runs the request phase and returns the stream (which remembers the route).
pub fn request(config: &Rc<CompiledConfig>, host: &mut FakeHost) -> Stream {
    let mut stream = Stream::new(Some(Rc::clone(config)), 1);
    stream.on_request_headers(host);
    stream
}

/// The name of the route a request ends up with, if any.
pub fn routed(config: &Rc<CompiledConfig>, host: &mut FakeHost) -> Option<String> {
    request(config, host).route().map(|r| r.name.to_string())
}
