//! `attache package oci`: the filter's `.wasm` as an OCI image layout that
//! Istio's WasmPlugin fetcher reads. The image is built by
//! `attache_render::oci`; this module reads the `.wasm` and writes files.
//! `attache package controller`: the controller's image
//! (`attache_controller::image`); this module finds and reads the binary's
//! loader and libraries.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use attache_controller::image;
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
    /// Write `attache controller` as an OCI image layout: the binary, its
    /// loader and shared libraries (none for a static binary), a numeric
    /// non-root user, entry point `attache controller`; print its digest.
    #[command(after_help = "\
Examples:
  attache package controller -o dist/controller --tag 0.1.0
  attache package controller --binary target/x86_64-unknown-linux-musl/release/attache -o dist/controller
  skopeo copy --preserve-digests oci:dist/controller:0.1.0 docker://registry.example.com/attache/controller:0.1.0

The binary defaults to this attache. Standard output is the manifest digest
(sha256:<hex>): pin the Deployment to it with
`kustomize edit set image attache-controller=REGISTRY/attache/controller@sha256:<hex>`
(deploy/controller/). The same binary and libraries give the same digest.")]
    Controller(ControllerArgs),
}

#[derive(Debug, clap::Args)]
pub struct ControllerArgs {
    /// The attache binary to package [default: this one].
    #[arg(long, value_name = "FILE")]
    pub binary: Option<PathBuf>,
    /// The OCI image layout directory to write.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// The tag recorded in the layout (`oci:DIR:TAG` for skopeo).
    #[arg(long, value_name = "TAG", default_value = "latest")]
    pub tag: String,
    /// Where the binary's shared libraries are looked for, in this order.
    /// Repeatable [default: the loader's own directories for the binary's
    /// architecture].
    #[arg(long, value_name = "DIR")]
    pub lib_dir: Vec<PathBuf>,
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
        Command::Controller(args) => controller(args),
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

/// The most bytes the binary or a library may have.
const MAX_BINARY_BYTES: u64 = 512 << 20;

fn controller(args: ControllerArgs) -> Result<ExitCode, CliError> {
    let binary_path = match &args.binary {
        Some(path) => path.clone(),
        None => std::env::current_exe().map_err(|e| {
            CliError::Usage(format!(
                "cannot find this attache binary ({e}); pass --binary"
            ))
        })?,
    };
    let shown = binary_path.display().to_string();
    let binary = read_regular_file(&binary_path, MAX_BINARY_BYTES)?;
    let needs = image::needs(&binary).map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
    let dirs = if args.lib_dir.is_empty() {
        default_lib_dirs(needs.architecture)
    } else {
        args.lib_dir.clone()
    };
    let libraries = libraries(&needs, &dirs)?;
    let layout = image::controller_image(&binary, &libraries, &args.tag)
        .map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
    for (relative, bytes) in &layout.files {
        let path = args.output.join(relative);
        create_parent(&path)?;
        write_atomically(&path, bytes)?;
    }
    let carried: Vec<&str> = libraries.iter().map(|(p, _)| p.as_str()).collect();
    eprintln!(
        "wrote {} (tag {}, {} bytes of binary{}); push it with: skopeo copy --preserve-digests oci:{}:{} docker://REGISTRY/attache/controller:{}",
        args.output.display(),
        args.tag,
        binary.len(),
        if carried.is_empty() {
            ", static: no libraries".to_string()
        } else {
            format!(", with {}", carried.join(", "))
        },
        args.output.display(),
        args.tag,
        args.tag
    );
    print_stdout(&format!("{}\n", layout.manifest_digest))?;
    Ok(ExitCode::SUCCESS)
}

/// Where glibc's loader looks without an ld.so.cache (its trusted
/// directories, Debian's multiarch layout first).
fn default_lib_dirs(architecture: &str) -> Vec<PathBuf> {
    let triple = match architecture {
        "arm64" => "aarch64-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    [
        format!("/lib/{triple}"),
        format!("/usr/lib/{triple}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The loader and every library the binary needs, and theirs, each at the
/// path the loader finds it at (the interpreter at its PT_INTERP path).
fn libraries(needs: &image::Needs, dirs: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>, CliError> {
    let mut found: Vec<(String, Vec<u8>)> = Vec::new();
    let interpreter_name = needs
        .interpreter
        .as_deref()
        .and_then(|i| Path::new(i).file_name())
        .map(|n| n.to_string_lossy().into_owned());
    if let Some(interpreter) = &needs.interpreter {
        let bytes = read_regular_file(Path::new(interpreter), MAX_BINARY_BYTES)?;
        found.push((interpreter.clone(), bytes));
    }
    let mut queue: Vec<String> = needs.needed.clone();
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = queue.pop() {
        // The loader itself is loaded already; its soname needs no copy.
        if Some(&name) == interpreter_name.as_ref() || !seen.insert(name.clone()) {
            continue;
        }
        let path = dirs
            .iter()
            .map(|d| d.join(&name))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "the binary needs {name}, which is in none of {}\n  hint: pass --lib-dir, or package a static binary (x86_64-unknown-linux-musl)",
                    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
                ))
            })?;
        let bytes = read_regular_file(&path, MAX_BINARY_BYTES)?;
        let shown = path.display().to_string();
        let own = image::needs(&bytes).map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
        queue.extend(own.needed);
        found.push((shown, bytes));
    }
    found.sort();
    Ok(found)
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
