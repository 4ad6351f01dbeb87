//! An Istio `extensions.istio.io/v1alpha1` `WasmPlugin` that loads the
//! Attaché filter into a Gateway's Envoy with the document as its
//! configuration. Every field that changes behaviour is written out, so the
//! manifest says what it does without Istio's defaults in mind.

use attache_contract::{envelope, DataPlaneDocument};
use attache_core::topology::{GatewayResolution, ObjectKey};
use serde_json::{json, Value};

pub use crate::plugin_config::SealedPieces;
use crate::wasm::FILTER_NAME;

/// Where Istio fetches the module unless `--url` says otherwise: a file
/// mounted into the gateway pod (docs/istio.md shows how).
pub const DEFAULT_URL: &str = "file:///etc/attache/attache_filter.wasm";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmPluginOptions {
    /// `oci://`, `https://` or `file://` location of the `.wasm`.
    pub url: String,
    /// `spec.sha256`, 64 lower-case hex digits: for an `oci://` URL Istio
    /// compares it with the image's manifest digest, for `https://` with the
    /// module's own sha256 (istio pkg/wasm/cache.go, `getOrFetch`).
    pub sha256: Option<String>,
    /// `spec.imagePullSecret`: a Secret in the WasmPlugin's namespace.
    pub image_pull_secret: Option<String>,
    pub fail_strategy: FailStrategy,
    /// Whether `pluginConfig` is the document itself or its compressed
    /// envelope (attache_contract::envelope).
    pub config_form: ConfigForm,
}

/// How the document is carried in `pluginConfig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfigForm {
    /// Inline while its compact JSON is at most
    /// `attache_contract::envelope::INLINE_MAX_BYTES` (readable in `kubectl
    /// get -o yaml`, fits a plain `kubectl apply`), compressed above.
    #[default]
    Auto,
    /// Always the document itself.
    Inline,
    /// Always the compressed envelope (of the table encoding).
    Compressed,
}

impl Default for WasmPluginOptions {
    fn default() -> Self {
        WasmPluginOptions {
            url: DEFAULT_URL.to_string(),
            sha256: None,
            image_pull_secret: None,
            fail_strategy: FailStrategy::FailClose,
            config_form: ConfigForm::Auto,
        }
    }
}

/// What Istio does when the module cannot be fetched, loaded or keeps
/// trapping (`WasmPlugin.spec.failStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailStrategy {
    /// Refuse requests: none passes without its timeouts, retries, header
    /// rules and the stripping of clients' `x-envoy-*` headers. The default.
    #[default]
    FailClose,
    /// Let requests through without the filter.
    FailOpen,
    /// A new plugin instance after a runtime error (a trap); every other
    /// failure is FAIL_CLOSE. What plain-Envoy rendering uses (docs/filter.md).
    FailReload,
}

impl FailStrategy {
    pub fn as_istio(self) -> &'static str {
        match self {
            FailStrategy::FailClose => "FAIL_CLOSE",
            FailStrategy::FailOpen => "FAIL_OPEN",
            FailStrategy::FailReload => "FAIL_RELOAD",
        }
    }
}

/// The largest WasmPlugin `render wasmplugin` writes without a warning and
/// `attache controller` applies: 1 MiB of JSON. The API server stores an
/// object in etcd, whose default request limit is 1.5 MiB
/// (`--max-request-bytes` 1,572,864); 1 MiB leaves room for what the server
/// adds (managedFields, status) to the object it stores.
pub const MAX_OBJECT_BYTES: usize = 1024 * 1024;

/// Why `plugin` would not fit the API server, if it would not: the one
/// check `render wasmplugin` (a warning, an error under `--strict`) and the
/// controller (the Gateway keeps its last applied object) share.
pub fn size_problem(plugin: &Value) -> Option<String> {
    let bytes = serde_json::to_vec(plugin).map_or(usize::MAX, |b| b.len());
    size_problem_at(plugin, bytes)
}

/// [`size_problem`] for a writer that has the plugin's JSON already (the
/// controller keeps it): `bytes` is its length.
pub fn size_problem_at(plugin: &Value, bytes: usize) -> Option<String> {
    (bytes > MAX_OBJECT_BYTES).then(|| {
        format!(
            "{} {}/{} is {bytes} bytes of JSON, over the {MAX_OBJECT_BYTES} bytes an object may have to be stored by the API server (etcd's default limit is 1.5 MiB, less what the server adds); the route table is too large for one object even compressed (docs/plugin-delivery.md)",
            plugin["kind"].as_str().unwrap_or("WasmPlugin"),
            plugin["metadata"]["namespace"].as_str().unwrap_or_default(),
            plugin["metadata"]["name"].as_str().unwrap_or_default(),
        )
    })
}

/// The `pluginConfig`: the data-plane document, or its envelope when
/// `form` asks for it or the document is too large to be carried inline
/// (docs/plugin-delivery.md). The envelope holds the table encoding
/// (schema 3), which the filter loads without parsing or building every
/// entry (docs/contract.md).
pub fn plugin_config(
    document: &attache_contract::Document,
    form: ConfigForm,
) -> Result<Value, serde_json::Error> {
    plugin_config_of(
        crate::plugin_config::encode(document),
        form,
        &mut SealedPieces::default(),
    )
}

/// [`plugin_config`] of a document already encoded, sealing with the
/// pieces of the Gateway's last table (`plugin_config::sealed_table_reusing`);
/// the value is the same.
fn plugin_config_of(
    encoded: DataPlaneDocument,
    form: ConfigForm,
    pieces: &mut SealedPieces,
) -> Result<Value, serde_json::Error> {
    let compress = match form {
        ConfigForm::Inline => false,
        ConfigForm::Compressed => true,
        ConfigForm::Auto => {
            crate::plugin_config::json_longer_than(&encoded, envelope::INLINE_MAX_BYTES)?
        }
    };
    if compress {
        serde_json::to_value(crate::plugin_config::sealed_table_reusing(&encoded, pieces))
    } else {
        serde_json::to_value(encoded)
    }
}

/// The metadata of every object rendered for one Gateway (WasmPlugin,
/// TrafficExtension, EnvoyExtensionPolicy, EnvoyFilter): named after it, in
/// its namespace, labelled as Attaché's.
pub fn gateway_object_metadata(gateway: &ObjectKey) -> Value {
    json!({
        "name": format!("attache-{}", gateway.name),
        "namespace": gateway.namespace,
        "labels": {"app.kubernetes.io/managed-by": "attache"}
    })
}

/// The object's metadata and its one targetRef, the Gateway (Istio's
/// extension objects live in their target's namespace), as both kinds
/// carry them (named alike: the two kinds may share a name).
pub fn object(kind: &str, gateway: &ObjectKey) -> Value {
    json!({
        "apiVersion": "extensions.istio.io/v1alpha1",
        "kind": kind,
        "metadata": gateway_object_metadata(gateway),
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway.name}]
        }
    })
}

/// The module's fields, the same in a WasmPlugin's spec and in a
/// TrafficExtension's `spec.wasm` (istio/api wasm.proto and
/// traffic_extension.proto `WasmConfig`).
pub fn module_fields(
    resolution: &GatewayResolution,
    options: &WasmPluginOptions,
) -> Result<serde_json::Map<String, Value>, serde_json::Error> {
    let config = plugin_config(&resolution.document, options.config_form)?;
    Ok(module_fields_with(options, config))
}

/// [`module_fields`] with `pluginConfig` given.
fn module_fields_with(
    options: &WasmPluginOptions,
    plugin_config: Value,
) -> serde_json::Map<String, Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("url".into(), json!(options.url));
    fields.insert("imagePullPolicy".into(), json!("IfNotPresent"));
    fields.insert("type".into(), json!("HTTP"));
    fields.insert("pluginName".into(), json!(FILTER_NAME));
    // By default, if the module cannot load or traps, refuse requests
    // instead of serving them without their timeouts, retries and header
    // rules (and without stripping clients' x-envoy-* headers).
    fields.insert(
        "failStrategy".into(),
        json!(options.fail_strategy.as_istio()),
    );
    if let Some(sha256) = &options.sha256 {
        fields.insert("sha256".into(), json!(sha256));
    }
    if let Some(secret) = &options.image_pull_secret {
        fields.insert("imagePullSecret".into(), json!(secret));
    }
    fields.insert("pluginConfig".into(), plugin_config);
    fields
}

pub fn wasm_plugin(
    resolution: &GatewayResolution,
    options: &WasmPluginOptions,
) -> Result<Value, serde_json::Error> {
    let config = plugin_config(&resolution.document, options.config_form)?;
    Ok(wasm_plugin_with(&resolution.gateway, options, config))
}

/// [`wasm_plugin`] for a writer that is done with the resolution and keeps
/// each Gateway's [`SealedPieces`] between writes (the controller): the
/// same object, with the document's names and matches moved into its
/// encoding rather than copied, and only the pieces of the table an edit
/// changed deflated again.
pub fn wasm_plugin_reusing(
    resolution: GatewayResolution,
    options: &WasmPluginOptions,
    pieces: &mut SealedPieces,
) -> Result<Value, serde_json::Error> {
    let encoded = DataPlaneDocument::encode_owned(resolution.document);
    let config = plugin_config_of(encoded, options.config_form, pieces)?;
    Ok(wasm_plugin_with(&resolution.gateway, options, config))
}

fn wasm_plugin_with(
    gateway: &ObjectKey,
    options: &WasmPluginOptions,
    plugin_config: Value,
) -> Value {
    let mut plugin = object("WasmPlugin", gateway);
    let spec = &mut plugin["spec"];
    for (field, value) in module_fields_with(options, plugin_config) {
        spec[field] = value;
    }
    // Last before the router: nothing after the filter can undo the
    // x-envoy-* retry and timeout headers it sets for the router.
    spec["phase"] = json!("UNSPECIFIED_PHASE");
    spec["priority"] = json!(0);
    plugin
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_contract::{Document, RouteEntry, SCHEMA_VERSION};

    #[test]
    fn the_plugin_targets_the_gateway_and_carries_the_document() {
        let document = Document {
            schema_version: SCHEMA_VERSION,
            gateway: "infra/edge".into(),
            options: Default::default(),
            routes: vec![RouteEntry {
                name: "http/shop/a/0".into(),
                sources: [("retry.attempts".into(), "RoutePolicy shop/r".into())].into(),
                ..RouteEntry::default()
            }],
        };
        let resolution = crate::test_fixtures::edge_resolution(document.clone());
        let plugin = wasm_plugin(
            &resolution,
            &WasmPluginOptions {
                url: "oci://r.example/attache:1".into(),
                ..WasmPluginOptions::default()
            },
        )
        .unwrap();
        assert_eq!(plugin["apiVersion"], "extensions.istio.io/v1alpha1");
        assert_eq!(
            plugin["metadata"],
            json!({"name": "attache-edge", "namespace": "infra",
            "labels": {"app.kubernetes.io/managed-by": "attache"}})
        );
        let spec = &plugin["spec"];
        assert_eq!(
            spec["targetRefs"],
            json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}])
        );
        assert_eq!(spec["url"], "oci://r.example/attache:1");
        assert_eq!(
            (spec["phase"].as_str(), spec["failStrategy"].as_str()),
            (Some("UNSPECIFIED_PHASE"), Some("FAIL_CLOSE"))
        );
        assert!(
            spec.get("selector").is_none(),
            "Istio refuses selector together with targetRefs"
        );
        assert!(
            spec["pluginConfig"]["groups"][0]["routes"][0]
                .get("sources")
                .is_none(),
            "provenance stays out of the data plane"
        );
        let carried: attache_contract::DataPlaneDocument =
            serde_json::from_value(spec["pluginConfig"].clone()).unwrap();
        assert_eq!(carried, crate::plugin_config::encode(&document));
        assert_eq!(carried.groups[0].routes[0].name, "http/shop/a/0");
        assert_eq!(WasmPluginOptions::default().url, DEFAULT_URL);
        assert_eq!(size_problem(&plugin), None);
        let mut big = plugin.clone();
        big["spec"]["pluginConfig"]["pad"] = json!("x".repeat(MAX_OBJECT_BYTES));
        let problem = size_problem(&big).unwrap();
        assert!(
            problem.starts_with("WasmPlugin infra/attache-edge is 10"),
            "{problem}"
        );
    }

    #[test]
    fn a_large_document_is_sealed_and_opens_to_the_same_document() {
        let routes = (0..3_000)
            .map(|i| RouteEntry {
                name: format!("http/shop/r{i}/0"),
                settings: attache_contract::Settings {
                    request_headers: Some(attache_contract::HeaderChanges {
                        set: vec![attache_contract::Header {
                            name: "x-tenant".into(),
                            value: format!("t{i}"),
                        }],
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..RouteEntry::default()
            })
            .collect();
        let document = Document {
            schema_version: SCHEMA_VERSION,
            gateway: "shop/edge".into(),
            options: Default::default(),
            routes,
        };
        let inline = plugin_config(&document, ConfigForm::Inline).unwrap();
        let size = serde_json::to_vec(&inline).unwrap().len();
        assert!(size > envelope::INLINE_MAX_BYTES, "{size}");
        let auto = plugin_config(&document, ConfigForm::Auto).unwrap();
        assert_eq!(auto[envelope::ENCODING_FIELD], envelope::ZLIB_BASE64_CHUNKS);
        let sealed: envelope::Envelope = serde_json::from_value(auto).unwrap();
        let text = envelope::open_all(sealed).unwrap();
        // The envelope carries the table encoding (schema 3) of the document.
        assert!(attache_contract::table::is_table(&text));
        let opened = attache_contract::table::decode(&text).unwrap();
        assert_eq!(opened, crate::plugin_config::encode(&document));
        // A small document stays inline unless compression is asked for.
        let one = Document {
            routes: document.routes[..1].to_vec(),
            ..document
        };
        assert_eq!(
            plugin_config(&one, ConfigForm::Auto).unwrap()["schemaVersion"],
            2
        );
        let forced = plugin_config(&one, ConfigForm::Compressed).unwrap();
        assert_eq!(
            forced[envelope::ENCODING_FIELD],
            envelope::ZLIB_BASE64_CHUNKS
        );
    }
}
