//! `attache controller`: the generator run in the cluster. Flags only; the
//! controller is `attache_controller` (docs/controller.md).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use attache_controller::deploy::{DEFAULT_LEASE, PROBE_PORT};
use attache_controller::kube::scrape::{self, ScrapeOptions};
use attache_controller::kube::{block_on, init_logging, Options};
use attache_controller::reconcile::{Config, ISTIO_CONTROLLER};

use attache_controller::plugin_kind::{Choice, PluginKind};

use super::plugin_flags::PluginArgs;
use super::CliError;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache controller --kubeconfig ~/.kube/config --no-leader-election
  attache controller --controller-name istio.io/gateway-controller -n shop -n infra

Watches GatewayClasses, Gateways, routes, Namespaces and the policies; for
every Gateway whose GatewayClass has --controller-name it server-side applies
the TrafficExtension `attache render trafficextension` would write (or the
WasmPlugin, where TrafficExtension is not served or --plugin-kind says so),
and writes the status of RoutePolicy and ClusterRoutePolicy
(docs/controller.md). On a switch of kinds the new object is applied before
the old one is deleted.")]
pub struct Args {
    /// A kubeconfig file [default: as kubectl: KUBECONFIG, ~/.kube/config,
    /// then the in-cluster service account].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Serve Gateways whose GatewayClass has this spec.controllerName.
    #[arg(long, value_name = "NAME", default_value = ISTIO_CONTROLLER)]
    pub controller_name: String,
    /// Only objects in this namespace (cluster-scoped ones always). Repeatable.
    #[arg(short = 'n', long = "namespace", value_name = "NAMESPACE")]
    pub namespaces: Vec<String>,
    #[command(flatten)]
    pub plugin: PluginArgs,
    /// The kind that carries the filter: TrafficExtension (Istio 1.30+) when
    /// the API server serves it, else WasmPlugin; or one of them always.
    #[arg(long, value_enum, default_value_t = PluginKindFlag::Auto)]
    pub plugin_kind: PluginKindFlag,
    /// Where /healthz, /readyz and /metrics are served.
    #[arg(long, value_name = "ADDRESS", default_value_t = SocketAddr::from(([0, 0, 0, 0], PROBE_PORT)))]
    pub probe_address: SocketAddr,
    /// Write without a Lease (one replica only).
    #[arg(long)]
    pub no_leader_election: bool,
    /// The Lease of leader election: NAMESPACE/NAME.
    #[arg(long, value_name = "NS/NAME", default_value = DEFAULT_LEASE)]
    pub lease: String,
    /// Who this replica is in the Lease [default: $POD_NAME, else the host name].
    #[arg(long, value_name = "ID")]
    pub identity: Option<String>,
    /// A burst of changes ends after this quiet time (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub debounce_ms: u64,
    /// ... or after this long at most (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub max_delay_ms: u64,
    /// Programmed only once every ready proxy replica of the Gateway serves
    /// the applied document, read from its stats (docs/controller.md,
    /// "Programmed means served"); false: once applied.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub confirm_served: bool,
    /// The label that names a proxy pod's Gateway (in the Gateway's namespace).
    #[arg(long, value_name = "LABEL", default_value = scrape::DEFAULT_LABEL)]
    pub proxy_selector_label: String,
    /// The port of a proxy pod's Prometheus stats.
    #[arg(long, value_name = "PORT", default_value_t = scrape::DEFAULT_PORT)]
    pub proxy_stats_port: u16,
    /// The path of a proxy pod's Prometheus stats.
    #[arg(long, value_name = "PATH", default_value = scrape::DEFAULT_PATH)]
    pub proxy_stats_path: String,
    /// Logs as text instead of JSON lines.
    #[arg(long)]
    pub log_text: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    init_logging(!args.log_text);
    let lease = if args.no_leader_election {
        None
    } else {
        let key = super::parse_key(&args.lease).map_err(|e| CliError::Usage(e.0))?;
        Some((key.namespace, key.name))
    };
    let identity = args
        .identity
        .or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| format!("attache-{}", std::process::id()));
    let options = Options {
        config: Config {
            controller_name: args.controller_name,
            namespaces: args.namespaces.into_iter().collect(),
            plugin: args.plugin.options(),
            // Decided at start from `plugin_kind` (discovery).
            ..Config::default()
        },
        kubeconfig: args.kubeconfig,
        probe_address: args.probe_address,
        lease,
        identity,
        debounce: Duration::from_millis(args.debounce_ms),
        max_delay: Duration::from_millis(args.max_delay_ms),
        plugin_kind: args.plugin_kind.into(),
        served: args.confirm_served.then(|| ScrapeOptions {
            label: args.proxy_selector_label,
            port: args.proxy_stats_port,
            path: args.proxy_stats_path,
            ..ScrapeOptions::default()
        }),
    };
    block_on(options).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// `--plugin-kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PluginKindFlag {
    Auto,
    Wasmplugin,
    Trafficextension,
}

impl From<PluginKindFlag> for Choice {
    fn from(flag: PluginKindFlag) -> Choice {
        match flag {
            PluginKindFlag::Auto => Choice::Auto,
            PluginKindFlag::Wasmplugin => Choice::Fixed(PluginKind::WasmPlugin),
            PluginKindFlag::Trafficextension => Choice::Fixed(PluginKind::TrafficExtension),
        }
    }
}
