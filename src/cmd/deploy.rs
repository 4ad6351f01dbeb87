//! `attache deploy`: the objects that install `attache controller`
//! (deploy/controller/). What they hold is `attache_controller::deploy`
//! (RBAC from the controller's kinds table); this module encodes and writes.

use std::path::PathBuf;
use std::process::ExitCode;

use attache_controller::deploy::{files, DeployOptions, File, DEFAULT_NAMESPACE};
use attache_controller::reconcile::ISTIO_CONTROLLER;
use attache_render::wasmplugin::DEFAULT_URL;
use clap::ValueEnum;

use super::plugin_flags::{ConfigFormArg, FailStrategyArg, PluginArgs};
use super::CliError;
use crate::error::BadFlagValue;
use crate::output::print_stdout;
use crate::output::write_file;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache deploy | kubectl apply -f -
  attache deploy -o deploy/controller/      (one file per part, as committed; kubectl apply -k)

Apply deploy/crds/ first. The WasmPlugin flags (--url, --sha256,
--image-pull-secret, --fail-strategy, --plugin-config) and --controller-name are passed on to
`attache controller` in the Deployment's args, e.g.
  attache deploy --url oci://REGISTRY/attache/filter@sha256:<hex> --sha256 <hex> The image is the one `attache package controller`
builds; pin it by digest with
  kustomize edit set image attache-controller=REGISTRY/attache/controller@sha256:<hex>")]
pub struct Args {
    /// Write one file per part and a kustomization.yaml into DIR instead of
    /// a YAML stream to standard output.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// The controller's namespace (also the Lease's).
    #[arg(long, value_name = "NAMESPACE", default_value = DEFAULT_NAMESPACE, value_parser = parse_namespace)]
    pub namespace: String,
    /// The controller's image.
    #[arg(long, value_name = "IMAGE", default_value = concat!("attache-controller:", env!("CARGO_PKG_VERSION")), value_parser = parse_image)]
    pub image: String,
    /// Replicas (one leads through the Lease, the others wait).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub replicas: u32,
    /// A namespace-scoped install: the controller lists and watches only
    /// this namespace (repeatable; as `attache controller -n`), with a Role
    /// in each and a ClusterRole for the cluster-scoped kinds only.
    #[arg(short = 'n', long = "watch-namespace", value_name = "NAMESPACE", value_parser = parse_namespace)]
    pub watch_namespaces: Vec<String>,
    /// The controller serves Gateways whose GatewayClass has this spec.controllerName.
    #[arg(long, value_name = "NAME", default_value = ISTIO_CONTROLLER)]
    pub controller_name: String,
    /// The WasmPlugin the controller writes (as `attache controller` takes them).
    #[command(flatten)]
    pub plugin: PluginArgs,
}

/// A namespace name is an RFC 1123 label: a subdomain
/// (`attache_core::dns_name`) of one part, at most 63 characters.
fn parse_namespace(text: &str) -> Result<String, BadFlagValue> {
    let label = text.len() <= 63 && !text.contains('.');
    if label && attache_core::dns_name::subdomain_problem(text).is_none() {
        Ok(text.to_string())
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not a namespace name: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
        )))
    }
}

/// An image reference: not empty, no whitespace or control characters
/// (a newline would end the YAML scalar it is written into).
fn parse_image(text: &str) -> Result<String, BadFlagValue> {
    if !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Ok(text.to_string())
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not an image reference: e.g. registry.example.com/attache/controller@sha256:<hex>"
        )))
    }
}

/// The flags that differ from `attache controller`'s defaults, in the
/// form it takes them (checked by the same rules: an http:// URL needs
/// --sha256).
fn controller_flags(args: &Args) -> Vec<String> {
    args.plugin.check();
    let mut flags = Vec::new();
    if args.controller_name != ISTIO_CONTROLLER {
        flags.push(format!("--controller-name={}", args.controller_name));
    }
    let plugin = &args.plugin;
    if plugin.url != DEFAULT_URL {
        flags.push(format!("--url={}", plugin.url));
    }
    if let Some(sha) = &plugin.sha256 {
        flags.push(format!("--sha256={sha}"));
    }
    if let Some(secret) = &plugin.image_pull_secret {
        flags.push(format!("--image-pull-secret={secret}"));
    }
    if plugin.fail_strategy != FailStrategyArg::Close {
        if let Some(value) = plugin.fail_strategy.to_possible_value() {
            flags.push(format!("--fail-strategy={}", value.get_name()));
        }
    }
    if plugin.plugin_config != ConfigFormArg::Auto {
        if let Some(value) = plugin.plugin_config.to_possible_value() {
            flags.push(format!("--plugin-config={}", value.get_name()));
        }
    }
    flags
}

/// The first line of every file.
const HEADER: &str =
    "# Generated by `attache deploy` from the controller's kinds table; do not edit.\n";

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let extra_args = controller_flags(&args);
    let all = files(&DeployOptions {
        namespace: args.namespace,
        image: args.image,
        replicas: args.replicas,
        extra_args,
        watched: args.watch_namespaces,
    });
    match args.output_dir {
        Some(dir) => {
            for file in &all {
                write_file(&dir.join(file.name), &encode(file)?)?;
            }
        }
        None => {
            // The objects, without the kustomization (not an API object).
            let texts = all
                .iter()
                .filter(|f| f.name != "kustomization.yaml")
                .map(encode)
                .collect::<Result<Vec<_>, _>>()?;
            print_stdout(&texts.join("---\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn encode(file: &File) -> Result<String, CliError> {
    let docs = file
        .objects
        .iter()
        .map(|o| serde_yaml_ng::to_string(o).map_err(|source| CliError::Yaml { source }))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!("{HEADER}{}", docs.join("---\n")))
}
