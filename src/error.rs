//! The CLI's errors: the one every subcommand can end with (`CliError`),
//! each variant naming what to do, and those it carries (a flag's value,
//! an input that cannot be read, a file Envoy refused). Below the commands,
//! `input.rs` and `output.rs`, which all return them, so none of them has to
//! import a command module for it.

use attache_core::topology::ObjectKey;

/// A flag's value that cannot be used: what it is not, and an example of
/// what would do. clap prints it after `invalid value '...' for '--flag'`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadFlagValue(pub String);

/// Every error a subcommand can end with; each names what to do.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Usage(String),
    #[error("the input is empty: no YAML or JSON document in {0}\n  hint: -f takes .yaml, .yml and .json files, directories of them (read recursively), or '-' for standard input")]
    EmptyInput(String),
    #[error("{path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Render(#[from] attache_render::RenderError),
    #[error(transparent)]
    Cluster(#[from] attache_controller::kube::cluster::ReadError),
    #[error("cannot encode the output as YAML: {source}")]
    Yaml { source: serde_yaml_ng::Error },
    #[error("cannot encode the output as JSON: {source}")]
    Json { source: serde_json::Error },
    #[error("the input has {0} error(s) (printed above); a live proxy keeps its last good configuration rather than silently dropping the invalid parts")]
    InvalidInput(usize),
    #[error("{0}\n  hint: {1}")]
    Git(String, &'static str),
    /// `--strict` found problems: exit 3 (`strict::STRICT_FAILURE`).
    #[error("--strict: {0}")]
    Strict(String),
    /// Standard output was closed by its reader; not reported, exit 0.
    #[error("standard output was closed")]
    ClosedPipe,
    #[error("{}", gateway_message(.0))]
    Gateway(#[from] attache_core::ResolveError),
    #[error("no entry for {wanted} in the resolved Gateway {gateway}{why}; entries there: {available}\n  hint: check --route, --rule and --listener against `attache resolve`")]
    NoSuchEntry {
        wanted: String,
        gateway: String,
        /// `: route shop/x attaches to no listener of ...` when the route
        /// has no entry at all; empty otherwise.
        why: String,
        available: String,
    },
}

impl CliError {
    /// `--route` (with `--rule`, `--listener`) named no entry of the
    /// resolved Gateway: say which entries there are.
    pub fn no_such_entry(
        route: &ObjectKey,
        rule: Option<&str>,
        listener: Option<&str>,
        gateway: &ObjectKey,
        resolved: &attache_core::Resolved,
        inputs: &attache_core::Inputs,
    ) -> Self {
        // The route's actual kind: a GRPCRoute named by --route is one when
        // no HTTPRoute has its name (the flag does not say which).
        let kind = if inputs.grpc_routes.contains_key(route) && !inputs.routes.contains_key(route) {
            attache_core::model::kinds::RouteKind::Grpc
        } else {
            attache_core::model::kinds::RouteKind::Http
        };
        let mut wanted = format!("{} {route}", kind.name());
        if let Some(rule) = rule {
            wanted.push_str(&format!(" rule {rule}"));
        }
        if let Some(listener) = listener {
            wanted.push_str(&format!(" on listener {listener}"));
        }
        let names: Vec<&str> = resolved
            .resolution
            .document
            .routes
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        // The route has no entry here at all: say why, in its parentRefs'
        // own words (the words of its status and warnings).
        let served = names.iter().any(|n| {
            let parts = attache_core::contract::EntryName::split(n);
            parts.namespace == route.namespace && parts.route == route.name
        });
        let why = match (
            served,
            attache_core::status::routes::why_no_entry(inputs, route),
        ) {
            (false, Some(why)) => format!(": {why}"),
            _ => String::new(),
        };
        CliError::NoSuchEntry {
            wanted,
            gateway: gateway.to_string(),
            why,
            available: if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            },
        }
    }
}

/// A Gateway that cannot be resolved, with what to do about it.
fn gateway_message(err: &attache_core::ResolveError) -> String {
    match err {
        // Carries its own hint: the Gateway was found, its routes are the problem.
        attache_core::ResolveError::TooManyEntries { .. } => err.to_string(),
        _ => format!(
            "{err}\n  hint: name the Gateway with --gateway NAMESPACE/NAME, and include its manifest in -f"
        ),
    }
}

/// Why a manifest could not be read (`crate::input`).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Yaml(#[from] attache_input::YamlError),
    #[error("{path}: no such file or directory\n  hint: -f takes files, directories (read recursively) or '-' for standard input")]
    Missing { path: String },
    #[error("{path}: is {what}, not a regular file; not read\n  hint: only regular files are read (and directories by -f); reading a FIFO or a device could block or never end")]
    NotRegular { path: String, what: &'static str },
    #[error("{path}: is larger than {limit} bytes; not read\n  hint: raise --max-input-bytes, or split manifests into several files")]
    TooLarge { path: String, limit: u64 },
}

/// Envoy's admin says it refused a file it was given: it will never apply
/// this version.
#[derive(Debug, thiserror::Error)]
#[error("Envoy refused {label} ({path}, version {version}); its log says why")]
pub struct EnvoyRefused {
    pub label: String,
    pub path: String,
    pub version: String,
}
