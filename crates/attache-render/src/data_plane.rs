//! The schema-1 document as the data plane receives it: without `sources`
//! and as compact JSON. The filter never reads provenance, yet at 10,000
//! routes it is most of the document's bytes, and Envoy parses every byte of
//! its configuration (YAML or JSON to proto) before the filter sees any, so
//! both cost load time for nothing. `attache resolve` keeps `sources`: that
//! output is for people and tools.

use attache_contract::Document;
use serde_json::Value;

/// The document without the provenance the filter ignores.
pub fn without_sources(document: &Document) -> Document {
    let mut stripped = document.clone();
    for route in &mut stripped.routes {
        route.sources.clear();
    }
    stripped
}

/// The plugin configuration string Envoy hands the filter.
pub fn compact_json(document: &Document) -> Result<String, serde_json::Error> {
    serde_json::to_string(&without_sources(document))
}

/// The same document as a structured value, for manifests (Istio's
/// `pluginConfig`) that embed it as an object rather than a string.
pub fn value(document: &Document) -> Result<Value, serde_json::Error> {
    serde_json::to_value(without_sources(document))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::one_route_document;

    #[test]
    fn provenance_is_left_out_and_everything_else_kept() {
        let original = one_route_document(500);
        let carried: Document = serde_json::from_str(&compact_json(&original).unwrap()).unwrap();
        assert!(carried.routes[0].sources.is_empty());
        let mut expected = original.clone();
        expected.routes[0].sources.clear();
        assert_eq!(carried, expected);
        // The caller's document (what `attache resolve` prints) is untouched.
        assert_eq!(original.routes[0].sources.len(), 1);
    }

    #[test]
    fn the_json_is_compact() {
        let text = compact_json(&one_route_document(500)).unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert!(!text.contains(": "), "{text}");
        assert!(!text.contains("sources"), "{text}");
    }

    #[test]
    fn the_value_has_no_sources_key() {
        let value = value(&one_route_document(500)).unwrap();
        assert!(value["routes"][0].get("sources").is_none(), "{value}");
        assert_eq!(value["routes"][0]["timeouts"]["requestMs"], 500);
    }
}
