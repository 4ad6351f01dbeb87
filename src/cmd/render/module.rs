//! `attache render envoyextensionpolicy` and `render envoyfilter`: the
//! objects that put the dynamic module (`libattache_module.so`) into a
//! Gateway run by Envoy Gateway or by Istio (docs/envoy-gateway.md,
//! docs/istio.md).

use std::path::PathBuf;
use std::process::ExitCode;

use attache_core::topology::{GatewayResolution, ObjectKey};
use attache_core::DataPlane;
use attache_render::envoyextensionpolicy::{
    envoy_extension_policy, envoy_proxy_registration, ExtensionPolicyOptions, DEFAULT_MODULE_NAME,
    DEFAULT_MODULE_PATH,
};
use attache_render::envoyfilter::envoy_filter;
use attache_render::wasmplugin::size_problem;
use serde_json::{json, Value};

use super::{emit, Selection};
use crate::cmd::parse_key;
use crate::cmd::plugin_flags::ConfigFormArg;
use crate::cmd::CliError;
use crate::error::BadFlagValue;

#[derive(Debug, clap::Args)]
pub struct ExtensionPolicyArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The module's name in the EnvoyProxy's spec.dynamicModules, which the
    /// policy's dynamicModule[].name references.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_MODULE_NAME, value_parser = parse_module_name)]
    pub module_name: String,
    /// The dynamic module as the proxy pod sees it (an absolute path); with
    /// --envoy-proxy, written into the EnvoyProxy's registration.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_MODULE_PATH, value_parser = parse_module_path)]
    pub module: String,
    /// Also write the EnvoyProxy NS/NAME's registration of the module
    /// (spec.dynamicModules only, for `kubectl apply --server-side`): the
    /// output is then a List of the EnvoyProxy and the policy.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub envoy_proxy: Option<ObjectKey>,
    /// spec.dynamicModule[].config: the document itself (inline), its
    /// zlib+base64 envelope (compressed), or inline up to 240 KiB and
    /// compressed above (auto; docs/plugin-delivery.md).
    #[arg(long, value_enum, default_value_t = ConfigFormArg::Auto)]
    pub plugin_config: ConfigFormArg,
    /// One policy per Gateway of the input (a List), instead of --gateway's.
    #[arg(long, conflicts_with = "gateway")]
    pub all_gateways: bool,
    /// Write to FILE (atomically) instead of standard output: YAML when
    /// FILE ends in .yaml or .yml, else JSON (kubectl reads either).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EnvoyFilterArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// The dynamic module as the gateway pod sees it (an absolute path;
    /// docs/istio.md mounts it from an image volume).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_MODULE_PATH, value_parser = parse_module_path)]
    pub module: String,
    /// One EnvoyFilter per Gateway of the input (a List), instead of
    /// --gateway's.
    #[arg(long, conflicts_with = "gateway")]
    pub all_gateways: bool,
    /// Write to FILE (atomically) instead of standard output: YAML when
    /// FILE ends in .yaml or .yml, else JSON (kubectl reads either).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The Gateways to render for: `--gateway`'s (or the input's only one),
/// or with `--all-gateways` every one. Envoy Gateway, like istiod, owns the
/// routes: it applies each rule's own header filters, timeout and retry on
/// the route, so both objects carry the document as for Istio, which
/// leaves a rule's own header operations to the route (docs/envoy-gateway.md).
fn resolutions(selection: &Selection, all: bool) -> Result<Vec<GatewayResolution>, CliError> {
    Ok(if all {
        selection
            .load_all(DataPlane::Istio)?
            .into_iter()
            .map(|r| r.resolution)
            .collect()
    } else {
        vec![selection.load(DataPlane::Istio)?.resolved.resolution]
    })
}

/// One object as it is, several as a List (kubectl applies either).
fn one_or_list(mut items: Vec<Value>) -> Value {
    if items.len() == 1 {
        items.remove(0)
    } else {
        json!({"apiVersion": "v1", "kind": "List", "items": items})
    }
}

pub fn extension_policy(args: ExtensionPolicyArgs) -> Result<ExitCode, CliError> {
    let options = ExtensionPolicyOptions {
        module_name: args.module_name.clone(),
        config_form: args.plugin_config.into(),
    };
    let mut items = Vec::new();
    for resolution in resolutions(&args.selection, args.all_gateways)? {
        let policy = envoy_extension_policy(&resolution, &options)
            .map_err(attache_render::RenderError::from)?;
        check_size(&policy, &args.selection)?;
        items.push(policy);
    }
    if let Some(proxy) = &args.envoy_proxy {
        items.insert(
            0,
            envoy_proxy_registration(proxy, &args.module_name, &args.module),
        );
    } else {
        // The policy alone does not load anything: say what the
        // operator's EnvoyProxy must hold, with the flags' values.
        eprintln!(
            "note: Envoy Gateway loads the module only if the Gateway's EnvoyProxy registers it: spec.dynamicModules: [{{name: {}, source: {{type: Local, local: {{path: {}}}}}, doNotClose: true}}]\n  hint: --envoy-proxy NS/NAME writes that registration too (docs/envoy-gateway.md)",
            args.module_name, args.module
        );
    }
    emit(&one_or_list(items), args.output.as_deref())
}

pub fn envoyfilter(args: EnvoyFilterArgs) -> Result<ExitCode, CliError> {
    let mut items = Vec::new();
    for resolution in resolutions(&args.selection, args.all_gateways)? {
        let filter =
            envoy_filter(&resolution, &args.module).map_err(attache_render::RenderError::from)?;
        check_size(&filter, &args.selection)?;
        items.push(filter);
    }
    emit(&one_or_list(items), args.output.as_deref())
}

/// The object the API server could not store: a warning, an error under
/// `--strict`, as for `render wasmplugin`.
fn check_size(value: &Value, selection: &Selection) -> Result<(), CliError> {
    if let Some(problem) = size_problem(value) {
        eprintln!("warning: {problem}");
        selection
            .strict
            .check(0, 1, "the object would not fit the API server")?;
    }
    Ok(())
}

/// Envoy Gateway's pattern for a module name (dynamic_module_types.go:
/// `^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`, at most 253 characters).
fn parse_module_name(text: &str) -> Result<String, BadFlagValue> {
    let bytes = text.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let inner = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.' || *b == b'-');
    if text.len() <= 253 && inner && edge(bytes.first()) && edge(bytes.last()) {
        Ok(text.to_string())
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not a dynamic module name: lower-case letters, digits, '.' and '-', starting and ending with a letter or digit, at most 253 characters (Envoy Gateway's DynamicModuleEntry.name), e.g. attache"
        )))
    }
}

/// An absolute path without control characters, at most 4,096 bytes
/// (Envoy Gateway's `local.path` bound): Envoy opens it as the proxy's
/// file system has it, and a relative one would depend on its directory.
fn parse_module_path(text: &str) -> Result<String, BadFlagValue> {
    if text.starts_with('/') && text.len() <= 4096 && !text.chars().any(char::is_control) {
        Ok(text.to_string())
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not the module's path in the proxy pod: give an absolute path of at most 4096 bytes, e.g. {DEFAULT_MODULE_PATH}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_envoy_gateways_pattern() {
        for good in ["attache", "a", "attache.v1", "a-1"] {
            assert!(parse_module_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Attache", "-a", "a-", "a_b", &"a".repeat(254)] {
            assert!(parse_module_name(bad).is_err(), "{bad}");
        }
        assert!(parse_module_path("relative.so").is_err());
        assert!(parse_module_path("/opt/a\n.so").is_err());
        assert!(parse_module_path(DEFAULT_MODULE_PATH).is_ok());
    }
}
