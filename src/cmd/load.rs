//! What `render`, `watch`, `resolve`, `explain` and `graph` share: reading
//! and resolving the input
//! (`load_and_resolve_for`, `load_and_resolve_source` for files or the cluster), the listener and backend flags (`ListenerArgs`),
//! and writing what Envoy reads (`encode_for`, `write_file`). Its own module
//! so that `watch` does not reach into `render`.

use std::path::Path;

use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use attache_core::{DataPlane, Resolved, Severity};
use attache_render::backends::{AddressBook, Overrides};
use attache_render::manifests::Manifests;
use attache_render::resources::ListenerOptions;
use serde_json::Value;

use super::source::SourceArgs;
use super::{CliError, InputArgs, LimitArgs};
use crate::error::BadFlagValue;
use crate::output::{pretty_json, report};

/// Where the Gateway's listeners bind and where its backends are: what the
/// static bootstrap, `render xds` and `watch --xds-dir` need to render
/// listeners and clusters.
#[derive(Debug, clap::Args)]
pub struct ListenerArgs {
    /// Address of a backend Service: NS/NAME=HOST:PORT, or *=HOST:PORT for
    /// every backend without its own. Beats Service/EndpointSlice manifests. Repeatable.
    #[arg(long = "backend", value_name = "NS/NAME=HOST:PORT")]
    pub backends: Vec<String>,
    /// Serve a Gateway listener on another local port: LISTENER=PORT. Repeatable.
    #[arg(long = "listener-port", value_name = "LISTENER=PORT", value_parser = parse_listener_port)]
    pub listener_ports: Vec<(String, u16)>,
    /// Local address the listeners bind.
    #[arg(long, value_name = "ADDRESS", default_value = "0.0.0.0")]
    pub listen_address: String,
}

impl ListenerArgs {
    pub fn options(&self) -> ListenerOptions {
        ListenerOptions {
            listen_address: self.listen_address.clone(),
            listener_ports: self.listener_ports.iter().cloned().collect(),
        }
    }

    /// The `--backend` overrides over the input's Service and EndpointSlice
    /// manifests.
    pub fn address_book(&self, docs: &[SourceDoc]) -> Result<AddressBook, CliError> {
        let mut overrides = Overrides::default();
        for given in &self.backends {
            overrides
                .add(given)
                .map_err(attache_render::RenderError::from)?;
        }
        Ok(AddressBook {
            overrides,
            manifests: Manifests::index(docs),
        })
    }
}

/// What was read and resolved, and how many error diagnostics (and errors
/// and warnings, for `--strict`) came with it.
pub struct Loaded {
    pub docs: Vec<SourceDoc>,
    pub inputs: attache_core::Inputs,
    pub resolved: Resolved,
    pub errors: usize,
    pub problems: usize,
}

/// Reads, parses and resolves for a data plane (Istio applies each rule's
/// own header filters itself; crates/attache-core/src/data_plane.rs);
/// prints the diagnostics to stderr (they do not stop a render: one bad
/// policy must not take the others down).
pub fn load_and_resolve_for(
    input: &InputArgs,
    gateway: Option<&ObjectKey>,
    limits: crate::input::ReadLimits,
    data_plane: DataPlane,
) -> Result<Loaded, CliError> {
    let docs = input.read(limits)?;
    resolve_docs(&input.limits, docs, gateway, data_plane)
}

/// [`load_and_resolve_for`] for a read command: files, or the live cluster
/// (whose unreadable objects count as problems for `--strict`).
pub fn load_and_resolve_source(
    source: &SourceArgs,
    gateway: Option<&ObjectKey>,
) -> Result<Loaded, CliError> {
    let read = source.read(false)?;
    let unreadable = read.live.as_ref().map_or(0, |l| l.unreadable);
    let mut loaded = resolve_docs(&source.limits, read.docs, gateway, DataPlane::Envoy)?;
    loaded.errors += unreadable;
    loaded.problems += unreadable;
    Ok(loaded)
}

/// [`load_and_resolve_for`] from documents already read.
pub fn resolve_docs(
    limits: &LimitArgs,
    docs: Vec<SourceDoc>,
    gateway: Option<&ObjectKey>,
    data_plane: DataPlane,
) -> Result<Loaded, CliError> {
    let inputs = limits.parse(&docs);
    let gateway = match attache_core::select_gateway(&inputs, gateway) {
        Ok(gateway) => gateway,
        Err(err) => {
            // An invalid Gateway is dropped by the parser: say why before
            // saying there is none.
            report(&inputs, &[]);
            return Err(err.into());
        }
    };
    let resolved = attache_core::resolve_for(&inputs, &gateway, data_plane)?;
    let problems = report(&inputs, &resolved.diagnostics);
    let errors = inputs
        .diagnostics
        .iter()
        .chain(&resolved.diagnostics)
        .filter(|d| d.severity == Severity::Error)
        .count();
    Ok(Loaded {
        docs,
        inputs,
        resolved,
        errors,
        problems,
    })
}

/// The text Envoy reads at `path`. Envoy 1.40 picks the parser by the
/// name (`MessageUtil::loadFromFile`): `.yaml` or `.yml` is YAML, any other
/// name JSON; so a file gets what Envoy will parse, and standard output,
/// which has no name, YAML for people.
///
/// Envoy's YAML parser (yaml-cpp) follows YAML 1.1, where an unquoted `yes`,
/// `off` or `1_000` is not a string, while the YAML writer follows 1.2 and
/// leaves them unquoted: a header match on the value "yes" became
/// `exact: true`, and Envoy refused the file. Where any string would read
/// back as something else, the text is JSON, which both YAML versions read
/// as written (JSON is flow-style YAML).
pub fn encode_for(value: &Value, path: Option<&Path>) -> Result<String, CliError> {
    if path.is_some_and(|path| !envoy_reads_yaml(path)) || !yaml_1_1_reads_back(value) {
        pretty_json(value)
    } else {
        serde_yaml_ng::to_string(value).map_err(|source| CliError::Yaml { source })
    }
}

/// Whether every string of `value` stays a string for a YAML 1.1 reader
/// when written unquoted (keys included).
fn yaml_1_1_reads_back(value: &Value) -> bool {
    match value {
        Value::String(s) => !yaml_1_1_scalar(s),
        Value::Array(items) => items.iter().all(yaml_1_1_reads_back),
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| !yaml_1_1_scalar(k) && yaml_1_1_reads_back(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
    }
}

/// A string Envoy's YAML reading turns into a bool, null or number, and
/// that the YAML writer leaves unquoted. Envoy (`yaml_utility.cc`) tries
/// yaml-cpp's bool conversion on a plain scalar, which takes YAML 1.1's
/// words (`y`, `yes`, `on`, `off` and their capitalised forms), then the
/// integer and float conversions; the writer quotes only what YAML 1.2
/// would read as another type (`true`, `null`, `1.5`), so it is asked.
fn yaml_1_1_scalar(s: &str) -> bool {
    const WORDS: [&str; 11] = [
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", "",
    ];
    let lower = s.to_ascii_lowercase();
    let suspect =
        WORDS.contains(&lower.as_str()) || s.parse::<f64>().is_ok() || s.parse::<i64>().is_ok();
    suspect && serde_yaml_ng::to_string(s).map_or(true, |text| !text.starts_with(['\'', '"']))
}

fn envoy_reads_yaml(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// From this size on, an ECDS file named for YAML gets a notice. Envoy 1.40
/// reads the configuration string of a 10,000-route Gateway (320,145 bytes)
/// for 309.8M instructions from YAML and 50.6M from JSON (callgrind, docs/envoy.md),
/// on its main thread at every policy change: about 800 instructions a byte
/// more for YAML. A 1,000-route Gateway's compact file is 32,597 bytes, so
/// from there YAML costs each edit some 26M instructions more, several
/// times the filter's own load of that document; below, it is noise.
pub const LARGE_YAML_ECDS_BYTES: usize = 32_000;

/// What to tell the user who writes the ECDS file `text` to `path`: `None`
/// unless Envoy will read it as YAML and it is large enough for that to
/// cost every edit.
pub fn yaml_ecds_notice(path: &Path, text: &str) -> Option<String> {
    if !envoy_reads_yaml(path) || text.len() < LARGE_YAML_ECDS_BYTES {
        return None;
    }
    Some(format!(
        "note: the ECDS file {} is {} KB of YAML, which Envoy parses again on every policy change; \
         Envoy reads a large document about 6x cheaper from JSON: name it {} and attache writes JSON \
         (docs/envoy.md, \"ECDS: new policies without a restart\")",
        path.display(),
        text.len() / 1000,
        path.with_extension("json").display(),
    ))
}

/// `LISTENER=PORT`.
fn parse_listener_port(text: &str) -> Result<(String, u16), BadFlagValue> {
    let invalid = || {
        BadFlagValue(format!(
            "{text:?} is not LISTENER=PORT with a port 1-65535 (e.g. http=8080)"
        ))
    };
    let (listener, port) = text.split_once('=').ok_or_else(invalid)?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(invalid)?;
    if listener.is_empty() {
        return Err(invalid());
    }
    Ok((listener.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_ports_parse_and_bad_ones_show_the_form() {
        assert_eq!(
            parse_listener_port("http=8080"),
            Ok(("http".to_string(), 8080))
        );
        for bad in ["http", "=80", "http=0", "http=70000", "http=x"] {
            assert!(
                parse_listener_port(bad)
                    .unwrap_err()
                    .0
                    .contains("LISTENER=PORT"),
                "{bad}"
            );
        }
    }

    #[test]
    fn yaml_names_get_yaml_and_every_other_name_json_as_envoy_parses_them() {
        let value = serde_json::json!({"a": {"b": [1, "two"]}});
        for name in ["x/ecds.json", "x/ecds", "x/ecds.txt", "x/ecds.yaml.tmp"] {
            let json = encode_for(&value, Some(Path::new(name))).unwrap();
            assert!(json.starts_with('{'), "{name}: {json}");
            assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), value);
        }
        for name in ["x/ecds.yaml", "x/ecds.yml"] {
            let yaml = encode_for(&value, Some(Path::new(name))).unwrap();
            assert!(yaml.starts_with("a:\n"), "{name}: {yaml}");
            assert_eq!(serde_yaml_ng::from_str::<Value>(&yaml).unwrap(), value);
        }
        let stdout = encode_for(&value, None).unwrap();
        assert!(stdout.starts_with("a:\n"), "{stdout}");
    }

    #[test]
    fn a_string_yaml_1_1_would_read_as_another_type_makes_the_file_json() {
        for ambiguous in ["yes", "No", "ON", "off", "y", "Y", "n"] {
            let value = serde_json::json!({"match": {"exact": ambiguous}});
            for name in [Some(Path::new("envoy.yaml")), None] {
                let text = encode_for(&value, name).unwrap();
                assert!(text.starts_with('{'), "{ambiguous} {name:?}: {text}");
                // JSON is YAML: a YAML reader gets the string back.
                assert_eq!(serde_yaml_ng::from_str::<Value>(&text).unwrap(), value);
            }
        }
        for plain in [
            "gold",
            "x-tier",
            "/set",
            "yesterday",
            "http/team-a/shop/0",
            "10s",
            "0.0.0.0",
            // Quoted by the writer already.
            "true",
            "null",
            "~",
            "1.5",
            "1_000",
        ] {
            let value = serde_json::json!({"exact": plain});
            let text = encode_for(&value, Some(Path::new("envoy.yaml"))).unwrap();
            assert!(text.starts_with("exact:"), "{plain}: {text}");
        }
    }

    #[test]
    fn only_a_large_ecds_file_named_for_yaml_gets_the_notice() {
        let large = "x".repeat(LARGE_YAML_ECDS_BYTES);
        let notice = yaml_ecds_notice(Path::new("run/ecds/attache-ecds.yaml"), &large).unwrap();
        assert!(
            notice.contains("run/ecds/attache-ecds.yaml is 32 KB of YAML"),
            "{notice}"
        );
        assert!(
            notice.contains("name it run/ecds/attache-ecds.json"),
            "{notice}"
        );
        assert!(yaml_ecds_notice(Path::new("e.yml"), &large).is_some());
        assert_eq!(yaml_ecds_notice(Path::new("e.json"), &large), None);
        assert_eq!(yaml_ecds_notice(Path::new("e"), &large), None);
        let small = &large[1..];
        assert_eq!(yaml_ecds_notice(Path::new("e.yaml"), small), None);
    }
}
