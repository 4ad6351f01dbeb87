//! The flags of the Istio WasmPlugin that `render wasmplugin` writes and
//! `attache controller` applies (checksum, pull secret, fail strategy) and
//! their checks: one definition for both commands.

use attache_render::wasmplugin::{ConfigForm, FailStrategy, WasmPluginOptions, DEFAULT_URL};

use crate::error::BadFlagValue;

#[derive(Debug, clap::Args)]
pub struct PluginArgs {
    /// Where Istio fetches the .wasm: oci://, https://, http:// or file://.
    #[arg(long, value_name = "URL", default_value = DEFAULT_URL, value_parser = parse_url)]
    pub url: String,
    /// spec.sha256, which Istio checks after fetching: for an oci:// URL the
    /// image's manifest digest (what `attache package oci` prints), for
    /// https:// the sha256 of the .wasm. 64 hex digits, `sha256:` optional.
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    pub sha256: Option<String>,
    /// spec.imagePullSecret: a docker-registry Secret in the Gateway's
    /// namespace, for a private registry.
    #[arg(long, value_name = "SECRET", value_parser = parse_secret_name)]
    pub image_pull_secret: Option<String>,
    /// What Istio does when the module cannot be fetched or loaded, or
    /// traps: refuse requests (fail-close), pass them without the filter
    /// (fail-open), or start a new VM after a trap (fail-reload).
    #[arg(long, value_enum, default_value_t = FailStrategyArg::Close)]
    pub fail_strategy: FailStrategyArg,
    /// spec.pluginConfig: the document itself (inline), its zlib+base64
    /// envelope (compressed), or inline up to 240 KiB and compressed above
    /// (auto; docs/plugin-delivery.md).
    #[arg(long, value_enum, default_value_t = ConfigFormArg::Auto)]
    pub plugin_config: ConfigFormArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfigFormArg {
    Auto,
    Inline,
    Compressed,
}

impl From<ConfigFormArg> for ConfigForm {
    fn from(arg: ConfigFormArg) -> Self {
        match arg {
            ConfigFormArg::Auto => ConfigForm::Auto,
            ConfigFormArg::Inline => ConfigForm::Inline,
            ConfigFormArg::Compressed => ConfigForm::Compressed,
        }
    }
}

impl PluginArgs {
    /// The options, refusing a module fetched over plain `http://` without
    /// `--sha256`: code anyone on the path could replace, run in every
    /// gateway. A usage error (exit 2), as clap reports a bad flag.
    pub fn options(&self) -> WasmPluginOptions {
        self.check();
        WasmPluginOptions {
            url: self.url.clone(),
            sha256: self.sha256.clone(),
            image_pull_secret: self.image_pull_secret.clone(),
            fail_strategy: self.fail_strategy.into(),
            config_form: self.plugin_config.into(),
        }
    }

    /// Refuses the flags a WasmPlugin must not be written with (a usage
    /// error, exit 2): a plain http:// URL without --sha256.
    pub fn check(&self) {
        if self.url.starts_with("http://") && self.sha256.is_none() {
            clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!(
                    "--url {} is plain http:// and --sha256 is not given: the module could be replaced on its way to every gateway\n  hint: pass --sha256 with the .wasm's sha256 (sha256sum attache_filter.wasm), or serve it over https:// or oci://\n",
                    self.url
                ),
            )
            .exit();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailStrategyArg {
    #[value(name = "fail-close")]
    Close,
    #[value(name = "fail-open")]
    Open,
    #[value(name = "fail-reload")]
    Reload,
}

impl From<FailStrategyArg> for FailStrategy {
    fn from(arg: FailStrategyArg) -> Self {
        match arg {
            FailStrategyArg::Close => FailStrategy::FailClose,
            FailStrategyArg::Open => FailStrategy::FailOpen,
            FailStrategyArg::Reload => FailStrategy::FailReload,
        }
    }
}

/// 64 hex digits (Istio's pattern `^[a-f0-9]{64}$`), lower-cased, with an
/// optional `sha256:` prefix removed.
fn parse_sha256(text: &str) -> Result<String, BadFlagValue> {
    let hex = text
        .strip_prefix("sha256:")
        .unwrap_or(text)
        .to_ascii_lowercase();
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex)
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not a sha256: expected 64 hex digits, e.g. the digest `attache package oci` prints"
        )))
    }
}

/// A Kubernetes Secret name: an RFC 1123 subdomain
/// (`attache_core::dns_name`, so `a..b` and `a.-b` are refused).
fn parse_secret_name(text: &str) -> Result<String, BadFlagValue> {
    if attache_core::dns_name::subdomain_problem(text).is_none() {
        Ok(text.to_string())
    } else {
        Err(BadFlagValue(format!(
            "{text:?} is not a Secret name: labels of lower-case letters, digits and '-' separated by single dots, each starting and ending with a letter or digit, at most 253 characters"
        )))
    }
}

/// The schemes Istio fetches a module from (the WasmPlugin `url` field,
/// istio/api extensions/v1alpha1/wasm.proto: `oci://`, `file://`,
/// `http[s]://`; istio pkg/wasm fetches each). Istio would read a URL
/// without a scheme as `oci://`; asking for one keeps the file explicit.
const URL_SCHEMES: [&str; 4] = ["oci", "https", "http", "file"];

/// `--url`: a known scheme, a host (an absolute path for `file://`), and no
/// whitespace or control characters, which would reach istiod and the
/// agent's fetcher as part of the address.
fn parse_url(text: &str) -> Result<String, BadFlagValue> {
    let problem = |why: &str| {
        Err(BadFlagValue(format!(
            "{text:?} is not a module URL: {why}; e.g. oci://registry.example.com/attache/attache-filter:0.1.0 or file:///etc/attache/attache_filter.wasm"
        )))
    };
    if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return problem("it has whitespace or control characters");
    }
    let Some((scheme, rest)) = text.split_once("://") else {
        return problem("it has no scheme (oci://, https://, http:// or file://)");
    };
    if !URL_SCHEMES.contains(&scheme) {
        return problem(&format!(
            "Istio does not fetch {scheme}:// (oci://, https://, http:// or file://)"
        ));
    }
    if scheme == "file" {
        if !rest.starts_with('/') || rest.len() < 2 {
            return problem("file:// takes an absolute path (file:///path/to/module.wasm)");
        }
    } else if rest.split(['/', '?', '#']).next().is_none_or(str::is_empty) {
        return problem(&format!("{scheme}:// needs a host"));
    }
    Ok(text.to_string())
}
