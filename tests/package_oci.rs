//! `attache package oci`: the filter as an OCI image that Istio's Wasm
//! fetcher reads (docs/packaging.md). The image is reproducible, and it
//! survives a real registry: Debian's `docker-registry` (the CNCF
//! distribution registry) on loopback, pushed and pulled back by digest with
//! `skopeo`, the layer's `plugin.wasm` byte for byte the `.wasm`.
//!
//! Without `docker-registry` or `skopeo` the registry test says so and does
//! nothing, except under CI=true, where a missing tool fails it
//! (scripts/setup.sh installs both).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
#[path = "support/oci_layout.rs"]
mod oci_layout;
#[path = "support/registry.rs"]
mod registry;
mod support;

use std::io::Read;
use std::path::Path;

use oci_layout::{first_image, layer_tar};
use registry::{registry_tools, round_trip, start_registry};

use support::{attache_ok, filter_wasm, scratch, text};

/// `attache package oci`: the layout written and the digest printed.
fn package(wasm: &Path, out: &Path, tag: &str) -> String {
    let output = attache_ok(&[
        "package",
        "oci",
        "--wasm",
        wasm.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--tag",
        tag,
    ]);
    text(&output.stdout).trim().to_owned()
}

/// `plugin.wasm` from the image a layout's index names first, the way
/// Istio's fetcher reads it (gzip, then tar, then the entry by name).
fn plugin_wasm(layout: &Path) -> (String, Vec<u8>) {
    let image = first_image(layout);
    let manifest_digest = image.digest.clone();
    let layer = &image.manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let tar = layer_tar(layout, &image, 0);
    let mut archive = tar::Archive::new(tar.as_slice());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some("plugin.wasm") {
            let mut wasm = Vec::new();
            entry.read_to_end(&mut wasm).unwrap();
            return (manifest_digest, wasm);
        }
    }
    panic!("no plugin.wasm in {}", layout.display());
}

#[test]
fn the_same_wasm_gives_the_same_image_byte_for_byte() {
    let dir = scratch("oci-repro");
    let wasm = filter_wasm();
    let first = package(&wasm, &dir.join("one"), "0.1.0");
    let second = package(&wasm, &dir.join("two"), "0.1.0");
    assert!(first.starts_with("sha256:") && first.len() == 71, "{first}");
    assert_eq!(first, second);
    for name in ["index.json", "oci-layout"] {
        assert_eq!(
            std::fs::read(dir.join("one").join(name)).unwrap(),
            std::fs::read(dir.join("two").join(name)).unwrap(),
            "{name}"
        );
    }
    let (digest, carried) = plugin_wasm(&dir.join("one"));
    assert_eq!(digest, first);
    assert_eq!(carried, std::fs::read(&wasm).unwrap());

    // Another module, another image; not a module at all, an error.
    let other = dir.join("other.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(&other, &bytes).unwrap();
    assert_ne!(package(&other, &dir.join("three"), "0.1.0"), first);
    std::fs::write(&other, b"MZ not wasm").unwrap();
    let refused = support::attache(&[
        "package",
        "oci",
        "--wasm",
        other.to_str().unwrap(),
        "-o",
        dir.join("four").to_str().unwrap(),
    ]);
    assert!(!refused.status.success(), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("not a WebAssembly binary"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--wasm` is read as `-f` reads manifests (src/input.rs): a device, even
/// through a symlink, or a directory is refused unopened, and a file over
/// `--max-input-bytes` unread, instead of `/dev/zero` filling memory.
#[test]
fn the_wasm_must_be_a_regular_file_within_the_limit() {
    let dir = scratch("oci-input");
    let link = dir.join("zero.wasm");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let wasm = filter_wasm();
    let size = std::fs::metadata(&wasm).unwrap().len();
    let under = (size - 1).to_string();
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let cases: [(&str, &[&str], String); 4] = [
        (
            "/dev/zero",
            &[],
            "/dev/zero: is a character device, not a regular file".into(),
        ),
        (
            link.to_str().unwrap(),
            &[],
            "zero.wasm: is a character device, not a regular file".into(),
        ),
        (
            dir.to_str().unwrap(),
            &[],
            "is a directory, not a regular file".into(),
        ),
        (
            wasm.to_str().unwrap(),
            &["--max-input-bytes", &under],
            format!("is larger than {under} bytes; not read"),
        ),
    ];
    for (path, extra, says) in cases {
        let mut args = vec!["package", "oci", "--wasm", path, "-o", out];
        args.extend_from_slice(extra);
        let refused = support::attache(&args);
        let stderr = text(&refused.stderr);
        assert!(!refused.status.success(), "{path}: {stderr}");
        assert!(stderr.contains(&says), "{path}: {stderr}");
        assert!(refused.stdout.is_empty(), "{path}: no digest printed");
    }
    assert!(!dir.join("out").exists(), "nothing written");
    // At the limit it is read.
    let exact = size.to_string();
    attache_ok(&[
        "package",
        "oci",
        "--wasm",
        wasm.to_str().unwrap(),
        "-o",
        out,
        "--max-input-bytes",
        &exact,
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_image_round_trips_through_a_real_registry_by_digest() {
    let Some((registry_bin, skopeo_bin)) = registry_tools() else {
        return;
    };
    let dir = scratch("oci-registry");
    let wasm = filter_wasm();
    let layout = dir.join("layout");
    let digest = package(&wasm, &layout, "0.1.0");
    let (_registry, addr) = start_registry(&registry_bin, &dir);
    // Pulled back by the digest `package oci` printed: the registry holds
    // exactly that image (what a WasmPlugin's `oci://…@sha256:` and its
    // `sha256` field name).
    let pulled = dir.join("pulled");
    round_trip(
        &skopeo_bin,
        &layout,
        "0.1.0",
        &addr,
        "attache/attache-filter",
        &digest,
        &pulled,
    );
    let (pulled_digest, carried) = plugin_wasm(&pulled);
    assert_eq!(pulled_digest, digest);
    assert_eq!(
        carried,
        std::fs::read(&wasm).unwrap(),
        "the layer's plugin.wasm is the .wasm"
    );
    drop(_registry);
    std::fs::remove_dir_all(&dir).unwrap();
}
