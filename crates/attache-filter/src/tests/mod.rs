//! Behaviour tests through the fake host: what a request looks like after
//! the filter, for documents written as JSON (the way Envoy hands them over).

mod config_errors;
mod contract;
mod enforcement;
mod fallback_index;
mod fallback_precedence;
mod listener_ports;
mod lookup;
mod plugin_lifecycle;
mod robustness;
mod stripping;

use std::rc::Rc;

use serde_json::{json, Value};

use crate::config::CompiledConfig;
use crate::stream::Stream;
use crate::testing::FakeHost;

/// A schema-1 document around `routes`.
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

pub fn compile(document: &Value) -> Rc<CompiledConfig> {
    Rc::new(CompiledConfig::from_bytes(document.to_string().as_bytes()).unwrap())
}

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
