//! The compressed pluginConfig (attache_contract::envelope) as Envoy hands
//! it over: read as the same document, hostile envelopes refused with one
//! error naming the field, the last good configuration kept.

use attache_contract::envelope::{seal, Envelope, MAX_DOCUMENT_BYTES};
use base64::Engine;
use serde_json::json;

use super::*;
use crate::error::{ConfigError, Problem};
use crate::host::LogLevel;
use crate::plugin::{Generations, Plugin};

fn document(ms: u64) -> Vec<u8> {
    filter_bytes(&doc(json!([
        entry("r", json!({"timeouts": {"requestMs": ms}})),
        entry(
            "s",
            json!({"requestHeaders": {"set": [{"name": "x-t", "value": "v"}]}})
        )
    ])))
}

fn sealed(ms: u64) -> Vec<u8> {
    serde_json::to_vec(&seal(&document(ms))).unwrap()
}

fn sealed_bytes(ms: u64) -> Vec<u8> {
    sealed(ms)
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn timeout_seen(plugin: &Plugin) -> Vec<String> {
    let mut host = FakeHost::request("h", "/", &[]).with_route_name("r");
    Stream::new(plugin.current(), plugin.generation()).on_request_headers(&mut host);
    host.request_values("x-envoy-upstream-rq-timeout-ms")
}

#[test]
fn a_sealed_document_compiles_to_the_same_table() {
    use crate::document::parse;
    let plain = parse(&document(100)).unwrap();
    assert_eq!(parse(&sealed(100)).unwrap(), plain);
    let opened = CompiledConfig::from_bytes(&sealed(100)).unwrap();
    assert_eq!(opened.route_count(), 2);
    // As Istio hands it over: a Struct turned into JSON, numbers doubles,
    // keys in any order, or the whole double-encoded as a string.
    let envelope = seal(&document(100));
    let istio = format!(
        r#"{{"length":{}.0,"data":"{}","encoding":"zlib+base64"}}"#,
        envelope.length, envelope.data
    );
    assert_eq!(parse(istio.as_bytes()).unwrap(), plain);
    let twice = serde_json::to_vec(&istio).unwrap();
    assert_eq!(parse(&twice).unwrap(), plain);
}

fn refusal(envelope: &serde_json::Value) -> ConfigError {
    CompiledConfig::from_bytes(envelope.to_string().as_bytes()).unwrap_err()
}

/// The envelope's text with `encoding` first, as `attache` writes it.
fn refusal_written(envelope: &serde_json::Value) -> ConfigError {
    let mut rest = envelope.clone();
    let encoding = rest.as_object_mut().unwrap().remove("encoding").unwrap();
    let rest = rest.to_string();
    let text = format!("{{\"encoding\":{encoding},{}", &rest[1..]);
    CompiledConfig::from_bytes(text.as_bytes()).unwrap_err()
}

#[test]
fn hostile_envelopes_are_refused_naming_the_field() {
    let good = serde_json::to_value(seal(&document(100))).unwrap();
    let with = |field: &str, value: serde_json::Value| {
        let mut e = good.clone();
        e[field] = value;
        e
    };
    let deflated = b64().decode(good["data"].as_str().unwrap()).unwrap();
    let cut = b64().encode(&deflated[..deflated.len() / 2]);
    let cases = [
        (
            with("encoding", json!("gzip")),
            "$.encoding",
            "\"gzip\" is not supported",
        ),
        (with("encoding", json!(7)), "$.encoding", "invalid type"),
        (
            with("data", json!("not base64!")),
            "$.data",
            "not standard base64",
        ),
        (with("data", json!(cut)), "$.data", "cut short"),
        (
            with("data", json!(b64().encode(b"plain text, not zlib"))),
            "$.data",
            "not a zlib stream",
        ),
        (with("length", json!(3)), "$.data", "more than the 3 bytes"),
        (
            with("length", json!(MAX_DOCUMENT_BYTES + 1)),
            "$.length",
            "over the",
        ),
        (with("length", json!(-1)), "$.length", "invalid value"),
        (with("length", json!(1.5)), "$.length", "invalid type"),
    ];
    for (envelope, path, words) in cases {
        let err = refusal(&envelope);
        assert_eq!(err.path(), path, "{err}");
        assert!(err.to_string().contains(words), "{path}: {err}");
        // The same, laid out as attache writes it (`encoding` first), which
        // the filter reads without its skimming pass.
        let err = refusal_written(&envelope);
        assert_eq!(err.path(), path, "{err}");
        assert!(err.to_string().contains(words), "{path}: {err}");
    }
    // Cut short anywhere after the writers' opening: refused, not read.
    let text = serde_json::to_string(&seal(&document(100))).unwrap();
    assert!(text.starts_with("{\"encoding\":"), "{text}");
    for end in [12, 13, 40, text.len() - 1] {
        assert!(
            CompiledConfig::from_bytes(&text.as_bytes()[..end]).is_err(),
            "{end}"
        );
    }
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("data");
    let err = refusal(&missing);
    assert_eq!(err.path(), "$.data", "{err}");
    assert!(
        err.to_string().contains("`data` is missing or empty"),
        "{err}"
    );
}

#[test]
fn a_sealed_document_keeps_every_check_of_the_inline_one() {
    let bad = filter_bytes(&doc(json!([entry(
        "r",
        json!({"retry": {"codes": [200]}})
    )])));
    let inline = CompiledConfig::from_bytes(&bad).unwrap_err();
    let sealed = CompiledConfig::from_bytes(&serde_json::to_vec(&seal(&bad)).unwrap()).unwrap_err();
    assert_eq!(inline, sealed);
    // Not JSON inside: the text position is the inflated document's.
    let err = CompiledConfig::from_bytes(&serde_json::to_vec(&seal(b"{,}")).unwrap()).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::NotJson {
                line: 1,
                column: 2,
                ..
            }
        ),
        "{err:?}"
    );
    // An envelope in an envelope is refused.
    let twice = serde_json::to_vec(&seal(&sealed_bytes(100))).unwrap();
    let err = CompiledConfig::from_bytes(&twice).unwrap_err();
    assert_eq!(err.path(), "$.encoding");
    assert!(err.to_string().contains("another envelope"), "{err}");
    // Schema 1 inside an envelope is refused as inline.
    let resolved = doc(json!([entry("r", json!({}))])).to_string();
    let err = CompiledConfig::from_bytes(&serde_json::to_vec(&seal(resolved.as_bytes())).unwrap())
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ConfigError::Invalid {
                problem: Problem::ResolvedSchema,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_bomb_is_refused_and_the_last_good_configuration_keeps_serving() {
    let generations = Generations::new();
    let mut plugin = Plugin::default();
    let mut host = FakeHost::default();
    assert!(plugin.configure(&mut host, &generations, sealed(100)));
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    // 48 MiB of spaces (valid JSON whitespace) then a document: small when
    // deflated, declared as a plausible size.
    let mut padded = vec![b' '; 48 * 1024 * 1024];
    padded.extend_from_slice(&document(200));
    let bomb = Envelope {
        length: 4096,
        ..seal(&padded)
    };
    assert!(bomb.data.len() < 200_000, "{}", bomb.data.len());
    let bytes = serde_json::to_vec(&bomb).unwrap();
    assert!(!plugin.configure(&mut host, &generations, bytes));
    let errors: Vec<String> = host
        .log_lines()
        .into_iter()
        .filter(|(l, _)| *l == LogLevel::Error)
        .map(|(_, t)| t)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("$.data: compressed pluginConfig: inflates to more than the 4096 bytes"),
        "{}",
        errors[0]
    );
    assert_eq!(plugin.generation(), 1);
    assert_eq!(timeout_seen(&plugin), vec!["100"]);
    // A later good sealed update is taken.
    assert!(plugin.configure(&mut host, &generations, sealed(300)));
    assert_eq!(timeout_seen(&plugin), vec!["300"]);
}
