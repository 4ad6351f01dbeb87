//! Reading the plugin configuration bytes into the contract's data-plane
//! document (schema 2, what `attache render` and `attache watch` write).
//!
//! The filter reads only that encoding: schema 1 (`attache resolve`) is for
//! people and tools, and not linking its parse keeps the `.wasm` about 27 KB
//! smaller (docs/filter.md). A schema-1 document is refused with a hint.
//!
//! The bytes are the JSON, either verbatim (a StringValue/BytesValue
//! configuration, or a JSON string holding it) or as Istio produces it from a
//! `WasmPlugin.pluginConfig` struct. Protobuf `Struct` numbers are doubles, so
//! `10000` may arrive as `10000.0` or `1e4`; integer fields accept integral
//! doubles (see [`crate::integral_floats`]).
//!
//! A large document comes compressed: an object with `encoding`, `length`
//! and `data` (attache_contract::envelope, docs/plugin-delivery.md), which
//! [`crate::envelope`] inflates before the same parse.

use attache_contract::envelope::Envelope;
use attache_contract::table;
use attache_contract::{DataPlaneDocument, DATA_PLANE_SCHEMA_VERSION, SCHEMA_VERSION};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

use crate::envelope::{Chunk, Inflated, PreviousPieces};
use crate::error::{ConfigError, Problem};
use crate::integral_floats::IntegralFloats;

/// Only the version, to refuse another schema before the real pass, and
/// whether the configuration is the compressed envelope
/// (attache_contract::envelope, `encoding`); the rest of the text is skipped
/// without allocating. A float, so that Istio's `2.0` reads too; plain
/// serde_json, since errors are reported by the real pass. Absent or not a
/// number: the real pass names what is wrong.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "schemaVersion", default)]
    schema_version: Option<f64>,
    #[serde(rename = "encoding", default)]
    encoding: Option<IgnoredAny>,
}

/// The configuration as a table (attache_contract::table, what the filter
/// loads): a table as is, inline or in the envelope; a schema-2 JSON
/// document encoded into one (its string indices checked first, naming the
/// field, since the table carries the strings themselves).
pub fn table(bytes: &[u8]) -> Result<Vec<u8>, ConfigError> {
    match table_owned(bytes.to_vec(), None::<&NoPrevious>)?.0 {
        Inflated::Whole(table) | Inflated::Head(table) => Ok(table),
    }
}

/// No configuration to reuse: a first load.
struct NoPrevious;

impl PreviousPieces for NoPrevious {
    fn chunk_bytes(&self, _: usize, _: &str, _: u64) -> Option<&[u8]> {
        None
    }
    fn groups_unchanged_from(&self, _: &[attache_contract::envelope::Envelope]) -> Option<usize> {
        None
    }
}

/// The same, taking the bytes (freed before inflating, or as soon as a
/// JSON document is parsed), and reusing the pieces of a chunked envelope
/// that `previous` already inflated (crate::envelope::inflate_reusing).
pub fn table_owned<P: PreviousPieces>(
    bytes: Vec<u8>,
    previous: Option<&P>,
) -> Result<(Inflated, Vec<Chunk>), ConfigError> {
    if table::is_table(&bytes) {
        return Ok((Inflated::Whole(bytes), Vec::new()));
    }
    let text = unwrap_string(&bytes)?;
    let view = text.as_deref().map_or(&bytes[..], str::as_bytes);
    // The envelope as the writers lay it out needs no skimming pass (a
    // whole pass over the text, in every VM on every update): the typed
    // pass reads it and names any fault.
    let written = view.starts_with(WRITTEN_ENVELOPE);
    let head = if written { None } else { head_of(view) };
    if written || is_envelope(view, head.as_ref()) {
        let envelope = parse_typed(view)?;
        drop(text);
        drop(bytes);
        let (inflated, chunks) = crate::envelope::inflate_reusing(envelope, previous)?;
        return match inflated {
            Inflated::Whole(text) if !table::is_table(&text) => {
                let table = encode_checked(&open_inflated(&text)?)?;
                Ok((Inflated::Whole(table), Vec::new()))
            }
            inflated => Ok((inflated, chunks)),
        };
    }
    let table = encode_checked(&parse_document(view, head)?)?;
    Ok((Inflated::Whole(table), Vec::new()))
}

/// A schema-2 document as a table, once its indices into `strings` are
/// known to hold (the table does not carry the string table).
pub fn encode_checked(doc: &DataPlaneDocument) -> Result<Vec<u8>, ConfigError> {
    for (p, profile) in doc.profiles.iter().enumerate() {
        if let Err(e) = profile.settings(&doc.strings) {
            let problem = Problem::Index {
                index: e.index,
                table: "strings",
                len: e.len,
            };
            return Err(ConfigError::invalid(
                format!("$.profiles[{p}].{}", e.field),
                problem,
            ));
        }
    }
    Ok(table::encode(doc))
}

/// Parses the data-plane encoding, inline or in its compressed envelope;
/// a document of another `schemaVersion` (schema 1 above all) is refused
/// before its body is read.
pub fn parse(bytes: &[u8]) -> Result<DataPlaneDocument, ConfigError> {
    let text = unwrap_string(bytes)?;
    let view = text.as_deref().map_or(bytes, str::as_bytes);
    let head = head_of(view);
    if is_envelope(view, head.as_ref()) {
        open(parse_typed(view)?)
    } else {
        parse_document(view, head)
    }
}

/// The same, taking the bytes, which are dropped as soon as they are no
/// longer needed: after the parse for an inline document, before inflating
/// for a compressed one.
pub fn parse_owned(bytes: Vec<u8>) -> Result<DataPlaneDocument, ConfigError> {
    let text = unwrap_string(&bytes)?;
    let view = text.as_deref().map_or(&bytes[..], str::as_bytes);
    let head = head_of(view);
    if is_envelope(view, head.as_ref()) {
        let envelope = parse_typed(view)?;
        drop(text);
        drop(bytes);
        open(envelope)
    } else {
        parse_document(view, head)
    }
}

/// How an envelope written by `attache` (attache_contract::envelope, its
/// field first) begins.
const WRITTEN_ENVELOPE: &[u8] = b"{\"encoding\":";

/// One skimming pass over the text (the real pass reports errors). It is
/// done once per configuration: each pass over a 10,000-route document
/// costs a share of the load time (bench/findings.md).
fn head_of(view: &[u8]) -> Option<Head> {
    serde_json::from_slice::<Head>(view).ok()
}

/// Whether the configuration is the envelope: an object with `encoding`
/// (serde would read an array's second item as `encoding`, hence the
/// object check).
fn is_envelope(view: &[u8], head: Option<&Head>) -> bool {
    let object = view.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    object && head.is_some_and(|h| h.encoding.is_some())
}

/// An inflated document may not hold another envelope.
fn open(envelope: Envelope) -> Result<DataPlaneDocument, ConfigError> {
    open_inflated(&crate::envelope::inflate(envelope)?)
}

fn open_inflated(inflated: &[u8]) -> Result<DataPlaneDocument, ConfigError> {
    let head = head_of(inflated);
    if is_envelope(inflated, head.as_ref()) {
        return Err(ConfigError::invalid(
            "$.encoding",
            Problem::Envelope(attache_contract::envelope::EnvelopeError::Nested),
        ));
    }
    parse_document(inflated, head)
}

/// The document itself, given its head: the version is checked before the
/// body is read.
fn parse_document(view: &[u8], head: Option<Head>) -> Result<DataPlaneDocument, ConfigError> {
    match head.and_then(|h| h.schema_version) {
        Some(v) => check_version(v).and_then(|()| parse_typed(view)),
        None => parse_typed(view),
    }
}

/// Refuses schema 1 and any version but 2.
fn check_version(v: f64) -> Result<(), ConfigError> {
    if v == f64::from(SCHEMA_VERSION) {
        Err(ConfigError::invalid(
            "$.schemaVersion",
            Problem::ResolvedSchema,
        ))
    } else if v != f64::from(DATA_PLANE_SCHEMA_VERSION) {
        Err(ConfigError::invalid(
            "$.schemaVersion",
            // Saturating: a version of 1e30 or -1 still reads as unsupported.
            Problem::SchemaVersion(v as u32),
        ))
    } else {
        Ok(())
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
            br#"{"schemaVersion":2.0,"gateway":"g","profiles":[
               {"timeouts":{"requestMs":1e4},"retry":{"attempts":2.0,"codes":[503.0]}}],
               "groups":[{"profile":0.0,"routes":[{"name":"r"}]}]}"#,
        )
        .unwrap();
        let profile = &d.profiles[0];
        assert_eq!(profile.timeouts.as_ref().unwrap().request_ms, Some(10_000));
        let retry = profile.retry.as_ref().unwrap();
        assert_eq!(retry.attempts, Some(2));
        assert_eq!(retry.codes.as_deref(), Some(&[503][..]));
        assert_eq!(d.groups[0].profile, Some(0));
    }

    #[test]
    fn a_fractional_integer_field_names_its_path_without_text_position() {
        let e = parse(br#"{"schemaVersion":2,"gateway":"g","groups":[],"options":{"trustClientControlHeaders":1.5}}"#)
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
        let inner = r#"{"schemaVersion":2,"gateway":"g","groups":[]}"#;
        let outer = serde_json::to_string(inner).unwrap();
        assert_eq!(parse(outer.as_bytes()).unwrap().gateway, "g");
        let twice = serde_json::to_string(&outer).unwrap();
        assert!(matches!(
            parse(twice.as_bytes()),
            Err(ConfigError::Shape { .. })
        ));
    }

    #[test]
    fn schema_1_and_unknown_versions_are_refused_before_the_body_is_read() {
        // The body is not even a schema-1 one: the version alone decides.
        let e = parse(br#"{"schemaVersion":1,"routes":"not read"}"#).unwrap_err();
        assert_eq!(
            e,
            ConfigError::invalid("$.schemaVersion", Problem::ResolvedSchema)
        );
        let e = parse(br#"{"schemaVersion":-4,"groups":"not read"}"#).unwrap_err();
        assert_eq!(
            e,
            ConfigError::invalid("$.schemaVersion", Problem::SchemaVersion(0))
        );
    }

    #[test]
    fn trailing_garbage_is_not_json() {
        let e = parse(br#"{"schemaVersion":2,"gateway":"g","groups":[]} x"#).unwrap_err();
        assert!(matches!(e, ConfigError::NotJson { line: 1, .. }), "{e:?}");
    }

    #[test]
    fn whitespace_only_is_empty() {
        assert_eq!(parse(b"  \n"), Err(ConfigError::Empty));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        match parse(b"{\n  \"schemaVersion\": 2,,\n}") {
            Err(ConfigError::NotJson { line, .. }) => assert_eq!(line, 2),
            other => panic!("unexpected {other:?}"),
        }
    }
}
