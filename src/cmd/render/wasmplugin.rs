//! `attache render wasmplugin` and `render trafficextension`: the Istio
//! object that loads the filter into a Gateway (its flags are
//! `crate::cmd::plugin_flags`, shared with `attache controller`).

use std::path::PathBuf;
use std::process::ExitCode;

use attache_core::DataPlane;
use attache_render::trafficextension::traffic_extension;
use attache_render::wasmplugin::{size_problem, wasm_plugin};

use super::{emit, Selection};
use crate::cmd::plugin_flags::PluginArgs;
use crate::cmd::CliError;

#[derive(Debug, clap::Args)]
pub struct WasmPluginArgs {
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub plugin: PluginArgs,
    /// Write to FILE (atomically) instead of standard output: YAML when
    /// FILE ends in .yaml or .yml, else JSON (kubectl reads either).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Which of Istio's two kinds to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    WasmPlugin,
    TrafficExtension,
}

pub fn run(args: WasmPluginArgs, kind: Kind) -> Result<ExitCode, CliError> {
    // istiod applies each rule's own header filters on the route.
    let loaded = args.selection.load(DataPlane::Istio)?;
    let resolution = &loaded.resolved.resolution;
    let options = args.plugin.options();
    let value = match kind {
        Kind::WasmPlugin => wasm_plugin(resolution, &options),
        Kind::TrafficExtension => traffic_extension(resolution, &options),
    }
    .map_err(attache_render::RenderError::from)?;
    if let Some(problem) = size_problem(&value) {
        eprintln!("warning: {problem}");
        args.selection
            .strict
            .check(0, 1, "the object would not fit the API server")?;
    }
    emit(&value, args.output.as_deref())
}
