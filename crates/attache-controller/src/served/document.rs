//! The identity of the document a plugin object carries
//! (attache_contract::document_id): what its Envoys publish once they
//! serve it. Read from the object itself, applied or live, so that it is
//! the document istiod hands over whatever form it takes: inline JSON, or
//! the compressed envelope holding JSON or the table, whole or in pieces.

use attache_contract::document_id::{document_id, of_document};
use attache_contract::envelope::{self, Envelope, EnvelopeError};
use attache_contract::{table, DataPlaneDocument};
use serde_json::Value;

/// Why a plugin object's document has no identity.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("the object has no pluginConfig")]
    Missing,
    #[error("its pluginConfig is not a data-plane document: {0}")]
    Document(#[source] serde_json::Error),
    #[error("its compressed pluginConfig cannot be opened: {0}")]
    Envelope(#[source] EnvelopeError),
}

/// The identity of a WasmPlugin's `spec.pluginConfig` or a
/// TrafficExtension's `spec.wasm.pluginConfig`.
pub fn of_plugin(plugin: &Value) -> Result<u64, DocumentError> {
    let config = [
        &plugin["spec"]["pluginConfig"],
        &plugin["spec"]["wasm"]["pluginConfig"],
    ]
    .into_iter()
    .find(|c| c.is_object())
    .ok_or(DocumentError::Missing)?;
    if config.get(envelope::ENCODING_FIELD).is_none() {
        return of_json(config.clone());
    }
    let sealed: Envelope =
        serde_json::from_value(config.clone()).map_err(DocumentError::Document)?;
    let bytes = envelope::open_all(sealed).map_err(DocumentError::Envelope)?;
    if table::is_table(&bytes) {
        return Ok(document_id(&bytes));
    }
    let value: Value = serde_json::from_slice(&bytes).map_err(DocumentError::Document)?;
    of_json(value)
}

fn of_json(value: Value) -> Result<u64, DocumentError> {
    let doc: DataPlaneDocument = serde_json::from_value(value).map_err(DocumentError::Document)?;
    Ok(of_document(&doc))
}

#[cfg(test)]
mod tests {
    use attache_contract::document_id::of_document;
    use attache_contract::envelope::{seal, seal_chunks};
    use attache_contract::{table, DataPlaneDocument};
    use serde_json::{json, Value};

    use super::of_plugin;

    fn doc() -> DataPlaneDocument {
        serde_json::from_value(json!({
            "schemaVersion": 2, "gateway": "infra/edge",
            "strings": ["x-a", "1"],
            "profiles": [{"timeouts": {"requestMs": 1500},
                          "requestHeaders": {"set": [[0, 1]]}}],
            "groups": [{"profile": 0, "hostnames": ["a.example"],
                        "routes": [{"name": "http/shop/a/0"}]}]
        }))
        .unwrap()
    }

    #[test]
    fn every_form_of_the_plugin_config_gives_the_documents_identity() {
        let doc = doc();
        let expected = of_document(&doc);
        let json = serde_json::to_vec(&doc).unwrap();
        let table = table::encode(&doc);
        let (_, cuts) = table::encode_with_cuts(&doc);
        let forms: [Value; 4] = [
            serde_json::to_value(&doc).unwrap(),
            serde_json::to_value(seal(&json)).unwrap(),
            serde_json::to_value(seal(&table)).unwrap(),
            serde_json::to_value(seal_chunks(&table, &cuts)).unwrap(),
        ];
        for config in forms {
            let wasm_plugin = json!({"spec": {"pluginConfig": config.clone()}});
            assert_eq!(of_plugin(&wasm_plugin).unwrap(), expected, "{config}");
            let extension = json!({"spec": {"wasm": {"pluginConfig": config}}});
            assert_eq!(of_plugin(&extension).unwrap(), expected);
        }
    }

    #[test]
    fn a_plugin_without_a_readable_document_has_none() {
        for plugin in [
            json!({"spec": {}}),
            json!({"spec": {"pluginConfig": {"schemaVersion": "two"}}}),
            json!({"spec": {"pluginConfig": {"encoding": "zlib+base64", "length": 3, "data": "!!"}}}),
        ] {
            assert!(of_plugin(&plugin).is_err(), "{plugin}");
        }
    }
}
