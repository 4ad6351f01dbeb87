//! `attache render envoy|xds|ecds|wasmplugin|trafficextension|envoyextensionpolicy|envoyfilter`:
//! data-plane configuration for one
//! Gateway. The decisions live in `attache-render`; this module reads the
//! input, resolves it and writes files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use attache_core::topology::ObjectKey;
use attache_core::{DataPlane, Resolved};
use attache_render::bootstrap::{dynamic_bootstrap, envoy_bootstrap, AdminOptions, EnvoyOptions};
use attache_render::filter::FilterBinary;
use attache_render::xds::{self, XdsLayout, XdsOptions};
use serde_json::Value;

mod module;
mod wasmplugin;

pub use module::{EnvoyFilterArgs, ExtensionPolicyArgs};
pub use wasmplugin::WasmPluginArgs;

use super::filter_flags::FilterArgs;
pub use super::load::ListenerArgs;
use super::load::{encode_for, load_and_resolve_for, yaml_ecds_notice, Loaded};
use super::parse_key;
use super::{CliError, InputArgs};
use crate::output::{pretty_json, print_stdout, write_atomically};
use crate::output::{write_file, write_private_file};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// An Envoy bootstrap for one Gateway: file-based xDS (--xds-dir), or static.
    #[command(after_help = "\
Examples (file-based xDS: routes, clusters and policies reload without restart):
  attache watch -f examples/shop/ --out run/attache.json --wasm attache_filter.wasm \\
      --ecds run/xds/ecds/attache-ecds.json --xds-dir run/xds \\
      --backend '*=127.0.0.1:9000' --listener-port http=8080 --envoy-admin 127.0.0.1:9901 &
  attache render envoy -f examples/shop/ --xds-dir run/xds -o envoy.yaml

Static (everything in the bootstrap; only the filter's ECDS file reloads):
  attache render ecds  -f examples/shop/ --wasm attache_filter.wasm -o run/ecds/attache-ecds.json
  attache render envoy -f examples/shop/ --ecds run/ecds/attache-ecds.json --wasm attache_filter.wasm \\
      --backend '*=127.0.0.1:9000' --listener-port http=8080 -o envoy.yaml

The filter as an Envoy 1.40 dynamic module instead of the .wasm: give
`--filter dynamic-module --module libattache_module.so` in place of --wasm,
to watch, render ecds and render envoy alike (docs/envoy.md):
  attache render envoy -f examples/shop/ --ecds run/ecds/attache-ecds.json \\
      --filter dynamic-module --module target/release/libattache_module.so \\
      --backend '*=127.0.0.1:9000' --listener-port http=8080 -o envoy.yaml

With --xds-dir the bootstrap only says where the LDS and CDS files are
(docs/envoy.md, \"File-based xDS\"); `attache watch --xds-dir` or `attache
render xds` writes them. Route names are the schema-1 entry names. Output is
YAML on standard output; -o FILE is written as Envoy parses it by the name:
YAML when FILE ends in .yaml or .yml, JSON otherwise.")]
    Envoy(EnvoyArgs),
    /// The LDS, RDS and CDS files of the file-based xDS layout, once.
    #[command(after_help = "\
Example:
  attache render xds -f examples/shop/ --xds-dir run/xds --ecds run/xds/ecds/attache-ecds.json \\
      --backend '*=127.0.0.1:9000' --listener-port http=8080

Writes DIR/lds/listeners.json, DIR/cds/clusters.json and one
DIR/rds/LISTENER/routes.json per Envoy listener, each atomically (CDS, then
RDS, then LDS). To change them while Envoy runs, use `attache watch
--xds-dir`, which also orders the writes against the ECDS file.")]
    Xds(XdsArgs),
    /// The ECDS file: the schema-1 document inside the filter's configuration (Wasm, or dynamic module).
    Ecds(EcdsArgs),
    /// An Istio WasmPlugin (extensions.istio.io/v1alpha1) for the Gateway.
    Wasmplugin(WasmPluginArgs),
    /// An Istio 1.30+ TrafficExtension (extensions.istio.io/v1alpha1), WasmPlugin's successor.
    Trafficextension(WasmPluginArgs),
    /// An Envoy Gateway EnvoyExtensionPolicy (gateway.envoyproxy.io/v1alpha1) loading the dynamic module.
    #[command(after_help = "\
Example:
  attache render envoyextensionpolicy -f manifests/ --gateway infra/edge \\
      --envoy-proxy envoy-gateway-system/proxy --module /opt/attache/libattache_module.so \\
      -o attache-eg.yaml
  kubectl apply --server-side --field-manager attache -f attache-eg.yaml

The policy targets the Gateway and references the module by --module-name
in its dynamicModule list, with the document as its config. Envoy Gateway
loads only modules its EnvoyProxy registers (spec.dynamicModules):
--envoy-proxy also writes that registration, with --module as the path and
doNotClose, as a List with the policy (server-side apply merges it into the
EnvoyProxy by name). The .so reaches the proxy pod as an image volume
(docs/envoy-gateway.md). --all-gateways writes one policy per Gateway of the
input instead of --gateway's.")]
    Envoyextensionpolicy(ExtensionPolicyArgs),
    /// An Istio EnvoyFilter (networking.istio.io/v1alpha3) inserting the dynamic module before the router.
    #[command(after_help = "\
Example:
  attache render envoyfilter -f manifests/ --gateway infra/edge \\
      --module /opt/attache/libattache_module.so -o envoyfilter.yaml

Selects the Gateway's pods by gateway.networking.k8s.io/gateway-name and
inserts the dynamic-modules filter before envoy.filters.http.router on their
listeners, with the same document as `render wasmplugin` (istiod's route
names). --all-gateways writes one per Gateway of the input. Needs an
istio-proxy built on Envoy 1.40; the WasmPlugin stays the default
(docs/istio.md, \"The dynamic module through an EnvoyFilter\").")]
    Envoyfilter(EnvoyFilterArgs),
}

/// What every render needs: the manifests and which Gateway.
#[derive(Debug, clap::Args)]
pub struct Selection {
    #[command(flatten)]
    pub input: InputArgs,
    /// The Gateway; may be left out when the input has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    #[command(flatten)]
    pub strict: super::strict::Strict,
}

impl Selection {
    /// Reads and resolves for `data_plane`; under `--strict` any error or
    /// warning stops the render before anything is written.
    pub fn load(&self, data_plane: DataPlane) -> Result<Loaded, CliError> {
        let loaded = load_and_resolve_for(
            &self.input,
            self.gateway.as_ref(),
            Default::default(),
            data_plane,
        )?;
        self.strict.check(loaded.problems, 0, "")?;
        Ok(loaded)
    }
}

impl Selection {
    /// Every Gateway of the input, each resolved for `data_plane`: the
    /// input's findings reported once, then each Gateway's; under
    /// `--strict` any error or warning stops the render.
    pub fn load_all(&self, data_plane: DataPlane) -> Result<Vec<Resolved>, CliError> {
        let docs = self.input.read(Default::default())?;
        let inputs = self.input.limits.parse(&docs);
        if inputs.gateways.is_empty() {
            crate::output::report(&inputs, &[]);
            // The resolver's own "no Gateway" error, with its hint.
            attache_core::select_gateway(&inputs, None)?;
        }
        let mut all = Vec::new();
        let mut findings = Vec::new();
        for key in inputs.gateways.keys() {
            let resolved = attache_core::resolve_for(&inputs, key, data_plane)?;
            findings.extend(resolved.diagnostics.iter().cloned());
            all.push(resolved);
        }
        let problems = crate::output::report(&inputs, &findings);
        self.strict.check(problems, 0, "")?;
        Ok(all)
    }
}

#[derive(Debug, clap::Args)]
pub struct EnvoyArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// File-based xDS: the directory (as Envoy sees it) holding the LDS, RDS
    /// and CDS files that `attache watch --xds-dir` writes. The bootstrap then
    /// holds no listener, route or cluster of its own.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ecds", "wasm", "backends", "listener_ports"])]
    pub xds_dir: Option<String>,
    /// Static bootstrap: the ECDS file Envoy reads the filter configuration
    /// from (written verbatim; Envoy watches its directory). It must exist
    /// when Envoy starts.
    #[arg(long, value_name = "FILE", required_unless_present = "xds_dir")]
    pub ecds: Option<String>,
    /// Static bootstrap: the filter's .wasm, written verbatim into the
    /// filter's default configuration.
    #[arg(long, value_name = "FILE")]
    pub wasm: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub listeners: ListenerArgs,
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
pub struct XdsArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The directory of the LDS, RDS and CDS files, as Envoy sees it (the
    /// paths inside the files name it); written to unless --output-dir.
    #[arg(long, value_name = "DIR")]
    pub xds_dir: String,
    /// The ECDS file the listeners load the filter's configuration from, as
    /// Envoy sees it.
    #[arg(long, value_name = "FILE")]
    pub ecds: String,
    /// Which filter the listeners take from the ECDS file (its type); the
    /// file itself is `render ecds`'s or `watch`'s.
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub listeners: ListenerArgs,
    /// Write the files under DIR instead of --xds-dir (e.g. for a container
    /// that sees --xds-dir elsewhere).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EcdsArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The filter's .wasm, written verbatim as vm_config.code.local.filename.
    #[arg(long, value_name = "FILE")]
    pub wasm: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Write to FILE atomically (temp file in the same directory + rename,
    /// which is what makes Envoy reload it) instead of standard output.
    /// YAML when FILE ends in .yaml or .yml, else JSON; name it .json:
    /// Envoy reads a large document about 6x cheaper from JSON.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Envoy(args) => envoy(args),
        Command::Xds(args) => render_xds(args),
        Command::Ecds(args) => {
            let loaded = args.selection.load(DataPlane::Envoy)?;
            let binary = args.filter.binary(args.wasm.as_deref());
            let value = ecds_value(&loaded.resolved, &binary)?;
            let output = args.output.as_deref();
            let text = encode_for(&value, output)?;
            if let Some(notice) = output.and_then(|path| yaml_ecds_notice(path, &text)) {
                eprintln!("{notice}");
            }
            write_or_print(&text, output)
        }
        Command::Wasmplugin(args) => wasmplugin::run(args, wasmplugin::Kind::WasmPlugin),
        Command::Trafficextension(args) => {
            wasmplugin::run(args, wasmplugin::Kind::TrafficExtension)
        }
        Command::Envoyextensionpolicy(args) => module::extension_policy(args),
        Command::Envoyfilter(args) => module::envoyfilter(args),
    }
}

fn envoy(args: EnvoyArgs) -> Result<ExitCode, CliError> {
    let Loaded { docs, resolved, .. } = args.selection.load(DataPlane::Envoy)?;
    let admin = AdminOptions {
        address: args.admin_address,
        port: args.admin_port,
    };
    // With --xds-dir the bootstrap names no filter: the pair is accepted
    // (one set of flags for a whole setup) and only checked.
    args.filter.check(args.xds_dir.is_none());
    let config = match (args.xds_dir, args.ecds, args.wasm) {
        (Some(dir), _, _) => dynamic_bootstrap(
            &resolved.resolution.gateway.to_string(),
            &admin,
            &XdsLayout::new(&dir),
        ),
        (None, Some(ecds_path), wasm) => {
            let filter = args.filter.binary(wasm.as_deref());
            let book = args.listeners.address_book(&docs)?;
            let options = EnvoyOptions {
                ecds_path,
                filter,
                admin,
                listeners: args.listeners.options(),
            };
            let rendered = envoy_bootstrap(&resolved.resolution, &book, &options)?;
            print_notes(&rendered.notes);
            rendered.config
        }
        _ => {
            return Err(CliError::Usage(
                "render envoy needs --xds-dir DIR, or --ecds FILE and --wasm FILE (or --filter dynamic-module --module FILE)".into(),
            ))
        }
    };
    emit(&config, args.output.as_deref())
}

fn render_xds(args: XdsArgs) -> Result<ExitCode, CliError> {
    let Loaded { docs, resolved, .. } = args.selection.load(DataPlane::Envoy)?;
    args.filter.check(false);
    let options = XdsOptions {
        ecds_path: args.ecds,
        filter_type_url: args.filter.type_url(),
        listeners: args.listeners.options(),
        layout: XdsLayout::new(&args.xds_dir),
    };
    let book = args.listeners.address_book(&docs)?;
    let (state, (notes, errors)) = xds::xds_state(&resolved.resolution, &book, &options)?;
    print_notes(&notes);
    print_errors(&errors);
    let local = XdsLayout::new(&match &args.output_dir {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => args.xds_dir.clone(),
    });
    for (name, secret) in &state.secrets {
        let path = local.sds_file(name)?;
        write_private_file(Path::new(&path), &pretty_json(&xds::sds_response(secret))?)?;
    }
    let mut files = vec![(local.cds_file(), xds::cds_response(&state.clusters))];
    for (name, config) in &state.route_configs {
        files.push((local.rds_file(name)?, xds::rds_response(config)));
    }
    files.push((local.lds_file(), xds::lds_response(&state.listeners)));
    for (path, value) in files {
        write_file(Path::new(&path), &pretty_json(&value)?)?;
    }
    // The other listeners are written; a listener left out is still an
    // error to fix.
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A listener left out for a reason the user must fix.
pub fn print_errors(errors: &[String]) {
    for error in errors {
        eprintln!("error: {error}");
    }
}

fn print_notes(notes: &[String]) {
    for note in notes {
        eprintln!("note: {note}");
    }
}

pub fn ecds_value(resolved: &Resolved, binary: &FilterBinary) -> Result<Value, CliError> {
    Ok(
        attache_render::ecds::discovery_response(&resolved.resolution.filter_document(), binary)
            .map_err(attache_render::RenderError::from)?,
    )
}

pub(super) fn emit(value: &Value, output: Option<&Path>) -> Result<ExitCode, CliError> {
    write_or_print(&encode_for(value, output)?, output)
}

fn write_or_print(text: &str, output: Option<&Path>) -> Result<ExitCode, CliError> {
    match output {
        Some(path) => write_atomically(path, text.as_bytes())?,
        None => print_stdout(text)?,
    }
    Ok(ExitCode::SUCCESS)
}
