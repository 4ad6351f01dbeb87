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

/// The text Envoy reads at `path`: it picks the parser by extension, so a
/// `.json` file gets JSON and anything else YAML.
pub fn encode_for(value: &Value, path: Option<&Path>) -> Result<String, CliError> {
    let json = path.and_then(Path::extension).is_some_and(|e| e == "json");
    if json {
        pretty_json(value)
    } else {
        serde_yaml_ng::to_string(value).map_err(|source| CliError::Yaml { source })
    }
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
    fn json_files_get_json_and_everything_else_yaml() {
        let value = serde_json::json!({"a": {"b": [1, "two"]}});
        let json = encode_for(&value, Some(Path::new("x/ecds.json"))).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), value);
        let yaml = encode_for(&value, Some(Path::new("x/ecds.yaml"))).unwrap();
        assert!(yaml.starts_with("a:\n"), "{yaml}");
        assert_eq!(serde_yaml_ng::from_str::<Value>(&yaml).unwrap(), value);
        assert_eq!(encode_for(&value, None).unwrap(), yaml);
    }
}
