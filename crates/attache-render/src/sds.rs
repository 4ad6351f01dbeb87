//! How an HTTPS listener's certificate reaches Envoy: SDS from a watched
//! file, one per Secret, so a rotated certificate is served without a
//! restart and without draining the listener (the listener names the
//! secret; only the secret's file changes).
//!
//! The file holds the private key: the CLI writes it readable by its owner
//! alone, and nothing here puts key material in a message.

use serde_json::{json, Value};

use crate::secrets::TlsSecret;

pub const SECRET_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";
const TLS_CONTEXT_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";
const TLS_INSPECTOR_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector";

/// The SDS name of a Secret: `<namespace>/<name>`.
pub fn secret_name(secret: &TlsSecret) -> String {
    secret.key.to_string()
}

/// The `envoy.extensions.transport_sockets.tls.v3.Secret` resource.
pub fn secret_resource(secret: &TlsSecret) -> Value {
    json!({
        "name": secret_name(secret),
        "tls_certificate": {
            "certificate_chain": {"inline_string": secret.certificate_chain},
            "private_key": {"inline_string": secret.private_key}
        }
    })
}

/// The downstream TLS transport socket of a filter chain: its certificates
/// by SDS name, each read from the file at its path.
pub fn transport_socket(secrets: &[(String, String)]) -> Value {
    let configs: Vec<Value> = secrets
        .iter()
        .map(|(name, path)| json!({"name": name, "sds_config": config_source(path)}))
        .collect();
    json!({
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": TLS_CONTEXT_TYPE_URL,
            "common_tls_context": {
                "tls_certificate_sds_secret_configs": configs,
                "alpn_protocols": ["h2", "http/1.1"]
            }
        }
    })
}

/// Reads the SNI a client sends, for `filter_chain_match.server_names`.
pub fn tls_inspector() -> Value {
    json!({"name": "envoy.filters.listener.tls_inspector", "typed_config": {"@type": TLS_INSPECTOR_TYPE_URL}})
}

/// `path_config_source` for `path`, watching the file's directory: Envoy
/// applies a new file when one is renamed into that directory.
pub fn config_source(path: &str) -> Value {
    let directory = match path.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((directory, _)) => directory.to_string(),
        None => ".".to_string(),
    };
    json!({
        "path_config_source": {"path": path, "watched_directory": {"path": directory}},
        "resource_api_version": "V3"
    })
}
