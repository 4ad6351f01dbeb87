//! `attache package oci`: the filter's `.wasm` as an OCI image layout that
//! Istio's WasmPlugin fetcher reads. The image is built by
//! `attache_render::oci`; this module reads the `.wasm` and writes files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use attache_render::oci::{wasm_image, OciError};

use super::CliError;
use crate::input::{read_regular_file, DEFAULT_MAX_INPUT_BYTES};
use crate::output::{print_stdout, write_atomically};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the filter as an OCI image layout (Istio's "compat" Wasm image:
    /// one tar+gzip layer holding plugin.wasm); print its manifest digest.
    #[command(after_help = "\
Examples:
  attache package oci --wasm target/wasm32-wasip1/release/attache_filter.wasm -o dist/oci --tag 0.1.0
  skopeo copy --preserve-digests oci:dist/oci:0.1.0 docker://registry.example.com/attache/filter:0.1.0

Standard output is the manifest digest (sha256:<hex>): name the image by it
(oci://registry.example.com/attache/filter@sha256:<hex>) or pass the hex to
`attache render wasmplugin --sha256`. The same .wasm always gives the same digest.")]
    Oci(OciArgs),
}

#[derive(Debug, clap::Args)]
pub struct OciArgs {
    /// The filter's .wasm.
    #[arg(long, value_name = "FILE")]
    pub wasm: PathBuf,
    /// The OCI image layout directory to write (created if missing; its
    /// index.json then names this image only).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// The most bytes the .wasm may have (the filter is well under 1 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
    /// The tag recorded in the layout (`oci:DIR:TAG` for skopeo).
    #[arg(long, value_name = "TAG", default_value = "latest")]
    pub tag: String,
}

pub fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Oci(args) => oci(args),
    }
}

fn oci(args: OciArgs) -> Result<ExitCode, CliError> {
    let shown = args.wasm.display().to_string();
    // The same checks as manifests get: a regular file, within the limit.
    let wasm = read_regular_file(&args.wasm, args.max_input_bytes)?;
    let layout = wasm_image(&wasm, &args.tag).map_err(|err| match err {
        OciError::NotWasm => CliError::Usage(format!(
            "{shown}: {err}\n  hint: pass the filter built by `cargo rustc --release --target wasm32-wasip1 -p attache-filter --crate-type cdylib` (scripts/setup.sh builds it)"
        )),
        other => CliError::Usage(other.to_string()),
    })?;
    for (relative, bytes) in &layout.files {
        let path = args.output.join(relative);
        create_parent(&path)?;
        write_atomically(&path, bytes)?;
    }
    eprintln!(
        "wrote {} (tag {}, layer {}); push it with: skopeo copy --preserve-digests oci:{}:{} docker://REGISTRY/REPOSITORY:{}",
        args.output.display(),
        args.tag,
        layout.layer_digest,
        args.output.display(),
        args.tag,
        args.tag
    );
    print_stdout(&format!("{}\n", layout.manifest_digest))?;
    Ok(ExitCode::SUCCESS)
}

fn create_parent(path: &Path) -> Result<(), CliError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|source| CliError::Write {
            path: dir.display().to_string(),
            source,
        }),
        None => Ok(()),
    }
}
