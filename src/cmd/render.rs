//! `attache render envoy|ecds|wasmplugin`: data-plane configuration for one
//! Gateway. The decisions live in `attache-render`; this module reads the
//! input, resolves it and writes files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use attache_core::{Resolved, Severity};
use attache_render::backends::{AddressBook, Overrides};
use attache_render::bootstrap::{envoy_bootstrap, EnvoyOptions};
use attache_render::manifests::Manifests;
use attache_render::wasmplugin::{wasm_plugin, WasmPluginOptions, DEFAULT_URL};
use serde_json::Value;

use super::parse_key;
use super::{CliError, InputArgs};
use crate::output::{pretty_json, print_stdout, report, write_atomically};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// An Envoy bootstrap for one Gateway, loading the filter through ECDS.
    #[command(after_help = "\
Examples:
  attache render ecds  -f examples/shop/ --wasm attache_filter.wasm -o envoy/attache-ecds.yaml
  attache render envoy -f examples/shop/ --ecds envoy/attache-ecds.yaml --wasm attache_filter.wasm \\
      --backend '*=127.0.0.1:9000' --listener-port http=8080 -o envoy.yaml

Route names are the schema-1 entry names. The filter's configuration comes
from the --ecds file; replace that file by renaming a new one over it (as
`attache render ecds -o` and `attache watch` do) and Envoy applies it without
a restart. Output is YAML, or JSON when -o ends in .json.")]
    Envoy(EnvoyArgs),
    /// The ECDS file: the schema-1 document inside the Wasm filter's configuration.
    Ecds(EcdsArgs),
    /// An Istio WasmPlugin (extensions.istio.io/v1alpha1) for the Gateway.
    Wasmplugin(WasmPluginArgs),
}

/// What every render needs: the manifests and which Gateway.
#[derive(Debug, clap::Args)]
pub struct Selection {
    #[command(flatten)]
    pub input: InputArgs,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
}

#[derive(Debug, clap::Args)]
pub struct EnvoyArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The ECDS file Envoy reads the filter configuration from (written
    /// verbatim; Envoy watches its directory). It must exist when Envoy starts.
    #[arg(long, value_name = "FILE")]
    pub ecds: String,
    /// The filter's .wasm, written verbatim into the filter's default configuration.
    #[arg(long, value_name = "FILE")]
    pub wasm: String,
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
    #[arg(long, value_name = "PORT", default_value_t = 9901)]
    pub admin_port: u16,
    /// Local address of the admin interface (keep it private).
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
    pub admin_address: String,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EcdsArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The filter's .wasm, written verbatim as vm_config.code.local.filename.
    #[arg(long, value_name = "FILE")]
    pub wasm: String,
    /// Write to FILE atomically (temp file in the same directory + rename,
    /// which is what makes Envoy reload it) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct WasmPluginArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Where Istio fetches the .wasm: oci://, https:// or file://.
    #[arg(long, value_name = "URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Envoy(args) => envoy(args),
        Command::Ecds(args) => {
            let loaded = load_and_resolve(
                &args.selection.input,
                args.selection.gateway.as_ref(),
                Default::default(),
            )?;
            let value = ecds_value(&loaded.resolved, &args.wasm)?;
            emit(&value, args.output.as_deref())
        }
        Command::Wasmplugin(args) => {
            let loaded = load_and_resolve(
                &args.selection.input,
                args.selection.gateway.as_ref(),
                Default::default(),
            )?;
            let value = wasm_plugin(
                &loaded.resolved.resolution,
                &WasmPluginOptions { url: args.url },
            )
            .map_err(attache_render::RenderError::from)?;
            emit(&value, args.output.as_deref())
        }
    }
}

fn envoy(args: EnvoyArgs) -> Result<ExitCode, CliError> {
    let Loaded { docs, resolved, .. } = load_and_resolve(
        &args.selection.input,
        args.selection.gateway.as_ref(),
        Default::default(),
    )?;
    let mut overrides = Overrides::default();
    for given in &args.backends {
        overrides
            .add(given)
            .map_err(attache_render::RenderError::from)?;
    }
    let book = AddressBook {
        overrides,
        manifests: Manifests::index(&docs),
    };
    let options = EnvoyOptions {
        ecds_path: args.ecds,
        wasm_path: args.wasm,
        listen_address: args.listen_address,
        admin_address: args.admin_address,
        admin_port: args.admin_port,
        listener_ports: args.listener_ports.into_iter().collect(),
    };
    let rendered = envoy_bootstrap(&resolved.resolution, &book, &options)?;
    for note in &rendered.notes {
        eprintln!("note: {note}");
    }
    emit(&rendered.config, args.output.as_deref())
}

/// What was read and resolved, and how many error diagnostics came with it.
pub struct Loaded {
    pub docs: Vec<SourceDoc>,
    pub resolved: Resolved,
    pub errors: usize,
}

/// Reads, parses and resolves; prints the diagnostics to stderr (they do
/// not stop a render: one bad policy must not take the others down).
pub fn load_and_resolve(
    input: &InputArgs,
    gateway: Option<&ObjectKey>,
    limits: crate::input::ReadLimits,
) -> Result<Loaded, CliError> {
    let docs = input.read(limits)?;
    let inputs = input.parse(&docs);
    let gateway = attache_core::select_gateway(&inputs, gateway)?;
    let resolved = attache_core::resolve(&inputs, &gateway)?;
    report(&inputs, &resolved.diagnostics);
    let errors = inputs
        .diagnostics
        .iter()
        .chain(&resolved.diagnostics)
        .filter(|d| d.severity == Severity::Error)
        .count();
    Ok(Loaded {
        docs,
        resolved,
        errors,
    })
}

pub fn ecds_value(resolved: &Resolved, wasm: &str) -> Result<Value, CliError> {
    Ok(
        attache_render::ecds::discovery_response(&resolved.resolution.document, wasm)
            .map_err(attache_render::RenderError::from)?,
    )
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

fn emit(value: &Value, output: Option<&Path>) -> Result<ExitCode, CliError> {
    let text = encode_for(value, output)?;
    match output {
        Some(path) => write_atomically(path, text.as_bytes())?,
        None => print_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `LISTENER=PORT`.
fn parse_listener_port(text: &str) -> Result<(String, u16), String> {
    let invalid = || format!("{text:?} is not LISTENER=PORT with a port 1-65535 (e.g. http=8080)");
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
