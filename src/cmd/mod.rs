//! Subcommands, one module each.

use std::path::PathBuf;
use std::process::ExitCode;

use attache_core::topology::ObjectKey;
use clap::{Parser, Subcommand};

use crate::error::BadFlagValue;
pub use crate::error::CliError;

/// Exit codes: [`strict::EXIT_CODES`], printed under `attache --help`.
#[derive(Debug, Parser)]
#[command(
    name = "attache",
    version,
    about = "Resolve Gateway API policy attachment (GEP-713/GEP-2649) into per-route settings for Envoy",
    long_about = None,
    after_help = strict::EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Input selection shared by every subcommand.
#[derive(Debug, clap::Args, Clone)]
pub struct InputArgs {
    /// Manifest files or directories (recursive; .yaml, .yml, .json), or '-'
    /// for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How much reading and resolving may cost (docs/semantics.md, "What a
/// policy may not do").
#[derive(Debug, clap::Args, Clone)]
pub struct LimitArgs {
    /// The most bytes one input file (or standard input) may have; with no
    /// -f, the most bytes of one kind's list from the cluster.
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
    /// The most entries (listener, route, rule paths) one Gateway may expand
    /// to; more fails fast naming the route chain being expanded.
    #[arg(long, value_name = "N", default_value_t = attache_core::limits::DEFAULT_MAX_ENTRIES)]
    pub max_entries: usize,
}

impl LimitArgs {
    /// Reads `files` within these limits.
    pub fn read(
        &self,
        files: &[PathBuf],
        limits: crate::input::ReadLimits,
    ) -> Result<Vec<attache_core::source::SourceDoc>, CliError> {
        let limits = crate::input::ReadLimits {
            max_input_bytes: self.max_input_bytes,
            ..limits
        };
        Ok(crate::input::read_paths(files, limits)?)
    }

    /// Parses documents with the resolver's limits set.
    pub fn parse(&self, docs: &[attache_core::source::SourceDoc]) -> attache_core::Inputs {
        let mut inputs = attache_core::parse(docs);
        inputs.limits.max_entries = self.max_entries;
        inputs
    }
}

impl InputArgs {
    /// Reads every input within the limits these flags set. Input with no
    /// document at all is an error of its own, not "no Gateway".
    pub fn read(
        &self,
        limits: crate::input::ReadLimits,
    ) -> Result<Vec<attache_core::source::SourceDoc>, CliError> {
        let docs = self.limits.read(&self.files, limits)?;
        if docs.is_empty() {
            return Err(CliError::EmptyInput(shown_paths(&self.files)));
        }
        Ok(docs)
    }

    /// Parses what [`InputArgs::read`] read, with the resolver's limits set.
    pub fn parse(&self, docs: &[attache_core::source::SourceDoc]) -> attache_core::Inputs {
        self.limits.parse(docs)
    }
}

/// The paths of `-f` as messages name them.
pub fn shown_paths(files: &[PathBuf]) -> String {
    let paths: Vec<String> = files
        .iter()
        .map(|p| match p.to_str() {
            Some("-") => "standard input".to_string(),
            _ => p.display().to_string(),
        })
        .collect();
    paths.join(", ")
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write the schema-1 JSON document for one Gateway.
    Resolve(resolve::Args),
    /// Show why every effective field of one route rule has its value.
    Explain(explain::Args),
    /// Print the status conditions of every policy.
    Status(status::Args),
    /// Render data-plane configuration (Envoy bootstrap, Istio WasmPlugin).
    #[command(subcommand)]
    Render(render::Command),
    /// Re-resolve whenever an input changes; swap the output atomically.
    Watch(watch::Args),
    /// Show what a change to policies or routes does to every route.
    Diff(diff::Args),
    /// Draw the attachment tree of one Gateway (Graphviz DOT or Mermaid).
    Graph(graph::Args),
    /// Print the RoutePolicy and ClusterRoutePolicy CustomResourceDefinitions.
    Crds(crds::Args),
    /// Package the filter for distribution (an OCI image for Istio).
    #[command(subcommand)]
    Package(package::Command),
    /// Run in a Kubernetes cluster: apply each Gateway's WasmPlugin, write policy status.
    Controller(controller::Args),
    /// Print the objects that install the controller (Namespace, RBAC, Deployment, Service).
    Deploy(deploy::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion(completion::CompletionArgs),
    /// Print the man page, or write one per command with --out-dir.
    Man(completion::ManArgs),
}

pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Resolve(args) => resolve::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Status(args) => status::run(args),
        Command::Render(command) => render::run(command),
        Command::Watch(args) => watch::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Crds(args) => crds::run(args),
        Command::Package(command) => package::run(command),
        Command::Controller(args) => controller::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Completion(args) => completion::completion(args),
        Command::Man(args) => completion::man(args),
    }
}

/// `NAMESPACE/NAME`.
pub fn parse_key(text: &str) -> Result<ObjectKey, BadFlagValue> {
    match text.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(ObjectKey {
                namespace: ns.to_string(),
                name: name.to_string(),
            })
        }
        _ => Err(BadFlagValue(format!(
            "{text:?} is not NAMESPACE/NAME (e.g. infra/edge)"
        ))),
    }
}

pub mod completion;
pub mod controller;
pub mod crds;
pub mod deploy;
pub mod diff;
pub mod explain;
pub mod filter_flags;
pub mod graph;
pub mod kubectl;
pub mod load;
pub mod package;
pub mod plugin_flags;
pub mod render;
pub mod resolve;
pub mod source;
pub mod status;
pub mod strict;
pub mod watch;
pub mod wrap;
