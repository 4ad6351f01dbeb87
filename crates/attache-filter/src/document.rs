//! Reading the plugin configuration bytes into the contract's `Document`.
//!
//! The bytes are the schema-1 JSON, either verbatim (a StringValue/BytesValue
//! configuration, or a JSON string holding it) or as Istio produces it from a
//! `WasmPlugin.pluginConfig` struct. Protobuf `Struct` numbers are doubles, so
//! `10000` may arrive as `10000.0` or `1e4`; integer fields accept integral
//! doubles (see [`crate::integral_floats`]).

use attache_contract::{DataPlaneDocument, Document, DATA_PLANE_SCHEMA_VERSION};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ConfigError;
use crate::integral_floats::IntegralFloats;

/// The two encodings the filter reads: schema 1 (`attache resolve`) and the
/// compact data-plane encoding (`attache render`, `attache watch`).
#[derive(Debug)]
pub enum Parsed {
    Resolved(Document),
    DataPlane(DataPlaneDocument),
}

/// Only the version, to choose the type for the real pass; the rest of the
/// text is skipped without allocating. A float, so that Istio's `2.0` reads
/// too; plain serde_json, since errors are reported by the real pass.
#[derive(Deserialize)]
struct Version {
    #[serde(rename = "schemaVersion", default)]
    schema_version: f64,
}

/// Parses either encoding, chosen by `schemaVersion` (2: data plane,
/// anything else: schema 1, whose compile step names a wrong version).
pub fn parse_any(bytes: &[u8]) -> Result<Parsed, ConfigError> {
    let text = unwrap_string(bytes)?;
    let bytes = text.as_deref().map_or(bytes, str::as_bytes);
    let version = serde_json::from_slice::<Version>(bytes).map_or(0.0, |v| v.schema_version);
    if version == f64::from(DATA_PLANE_SCHEMA_VERSION) {
        parse_typed(bytes).map(Parsed::DataPlane)
    } else if cfg!(feature = "data-plane-only") {
        // The schema-1 parse is not linked at all in this build: what
        // dropping schema 1 from the filter would save (bench/findings.md).
        Err(ConfigError::invalid(
            "$.schemaVersion",
            crate::error::Problem::SchemaVersion(version as u32),
        ))
    } else {
        parse_typed(bytes).map(Parsed::Resolved)
    }
}

/// A document handed over as a JSON string (double-encoded) is unwrapped once.
fn unwrap_string(bytes: &[u8]) -> Result<Option<String>, ConfigError> {
    let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(ConfigError::Empty);
    };
    if *first == b'"' {
        return serde_json::from_slice(bytes).map(Some).map_err(not_json);
    }
    Ok(None)
}

/// Parses and shapes a schema-1 configuration; value checks happen in
/// `compile`. One typed pass over the bytes (no intermediate JSON tree).
pub fn parse(bytes: &[u8]) -> Result<Document, ConfigError> {
    let text = unwrap_string(bytes)?;
    parse_typed(text.as_deref().map_or(bytes, str::as_bytes))
}

fn parse_typed<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ConfigError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let doc = serde_path_to_error::deserialize(IntegralFloats(&mut de)).map_err(|err| {
        let path = json_path(&err.path().to_string());
        classify(err.into_inner(), path)
    })?;
    de.end().map_err(not_json)?;
    Ok(doc)
}

/// Syntax errors say where in the text; errors about a well-formed value
/// say where in the document.
fn classify(err: serde_json::Error, path: String) -> ConfigError {
    if err.is_data() {
        // serde_json appends the text position to data errors; the JSON path
        // already says where, and is the same whatever the formatting.
        let full = err.to_string();
        let position = format!(" at line {} column {}", err.line(), err.column());
        let reason = full.strip_suffix(&position).unwrap_or(&full).to_string();
        ConfigError::Shape { path, reason }
    } else {
        not_json(err)
    }
}

fn not_json(err: serde_json::Error) -> ConfigError {
    ConfigError::NotJson {
        line: err.line(),
        column: err.column(),
        reason: err.to_string(),
    }
}

/// serde_path_to_error prints the root as `.`; the filter's messages use
/// `$`-rooted paths like `$.routes[0].retry.codes[1]`.
fn json_path(raw: &str) -> String {
    if raw == "." || raw.is_empty() {
        "$".to_string()
    } else if raw.starts_with('[') {
        format!("${raw}")
    } else {
        format!("$.{raw}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn istio_struct_numbers_are_read_as_integers() {
        let d = parse(
            br#"{"schemaVersion":1.0,"gateway":"g","routes":[{"name":"r","listener":"l",
               "routeNamespace":"n","routeName":"r","rule":"0",
               "timeouts":{"requestMs":1e4},"retry":{"attempts":2.0,"codes":[503.0]}}]}"#,
        )
        .unwrap();
        let route = &d.routes[0];
        assert_eq!(route.timeouts.as_ref().unwrap().request_ms, Some(10_000));
        let retry = route.retry.as_ref().unwrap();
        assert_eq!(retry.attempts, Some(2));
        assert_eq!(retry.codes.as_deref(), Some(&[503][..]));
    }

    #[test]
    fn a_fractional_integer_field_names_its_path_without_text_position() {
        let e = parse(br#"{"schemaVersion":1,"gateway":"g","routes":[],"options":{"trustClientControlHeaders":1.5}}"#)
            .unwrap_err();
        match e {
            ConfigError::Shape { path, reason } => {
                assert_eq!(path, "$.options.trustClientControlHeaders");
                assert!(
                    reason.starts_with("invalid type: floating point `1.5`"),
                    "{reason}"
                );
                assert!(!reason.contains(" at line "), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn double_encoded_documents_are_unwrapped_once() {
        let inner = r#"{"schemaVersion":1,"gateway":"g","routes":[]}"#;
        let outer = serde_json::to_string(inner).unwrap();
        assert_eq!(parse(outer.as_bytes()).unwrap().gateway, "g");
        let twice = serde_json::to_string(&outer).unwrap();
        assert!(matches!(
            parse(twice.as_bytes()),
            Err(ConfigError::Shape { .. })
        ));
    }

    #[test]
    fn trailing_garbage_is_not_json() {
        let e = parse(br#"{"schemaVersion":1,"gateway":"g","routes":[]} x"#).unwrap_err();
        assert!(matches!(e, ConfigError::NotJson { line: 1, .. }), "{e:?}");
    }

    #[test]
    fn whitespace_only_is_empty() {
        assert_eq!(parse(b"  \n"), Err(ConfigError::Empty));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        match parse(b"{\n  \"schemaVersion\": 1,,\n}") {
            Err(ConfigError::NotJson { line, .. }) => assert_eq!(line, 2),
            other => panic!("unexpected {other:?}"),
        }
    }
}
