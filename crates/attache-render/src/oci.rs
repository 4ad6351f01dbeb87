//! The filter as an OCI image (`attache package oci`), in the variant
//! Istio's Wasm fetcher tries first: the "compat" variant of the Wasm image
//! specification, a standard OCI image whose one layer
//! (`application/vnd.oci.image.layer.v1.tar+gzip`) is a tar holding
//! `plugin.wasm` (istio pkg/wasm/imagefetcher.go, `extractOCIStandardImage`
//! and `extractWasmPluginBinary`). It is an ordinary image to every registry
//! and tool.
//!
//! Reproducible: the same `.wasm` gives the same bytes and so the same
//! manifest digest. The tar entry has fixed metadata (mtime 0, uid/gid 0,
//! mode 0444, no user names), the gzip header has no name and mtime 0, JSON
//! is compact with keys in a fixed order, and nothing carries a clock.
//!
//! Pure: [`wasm_image`] returns the layout's files; the CLI writes them.
//! [`image`] is the general one-layer image both it and the controller's
//! image (`attache package controller`, attache_controller::image) use.

use std::io::Write;

use flate2::{Compression, GzBuilder};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The name Istio looks for inside the layer.
pub const PLUGIN_FILE: &str = "plugin.wasm";
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The first bytes of every WebAssembly binary (Istio checks them too).
const WASM_MAGIC: &[u8] = b"\0asm";

pub use crate::error::OciError;

/// An OCI image layout (image-spec `image-layout.md`): each file's path
/// inside the layout directory and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLayout {
    /// `sha256:<hex>` of the manifest: what a registry reports for the
    /// image, what `oci://...@sha256:` names, and (hex only) what a
    /// WasmPlugin's `sha256` must be for an `oci://` URL.
    pub manifest_digest: String,
    /// `sha256:<hex>` of the layer blob.
    pub layer_digest: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// The image of `wasm`, tagged `tag` in the layout's index.
pub fn wasm_image(wasm: &[u8], tag: &str) -> Result<ImageLayout, OciError> {
    if !wasm.starts_with(WASM_MAGIC) {
        return Err(OciError::NotWasm);
    }
    // wasm/wasip1 is the Go platform pair for WASI modules (image-spec
    // `config.md`); Istio runs no process, so no process config.
    image(
        &[LayerEntry::file(PLUGIN_FILE, 0o444, wasm.to_vec())],
        ("wasm", "wasip1"),
        json!({}),
        tag,
    )
}

/// One entry of an image's layer: a directory or a regular file, owned by
/// root, with fixed metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerEntry {
    /// Relative path (`usr/local/bin/attache`); a directory ends in `/`.
    pub path: String,
    pub mode: u32,
    /// None for a directory.
    pub content: Option<Vec<u8>>,
}

impl LayerEntry {
    pub fn file(path: &str, mode: u32, content: Vec<u8>) -> Self {
        LayerEntry {
            path: path.to_string(),
            mode,
            content: Some(content),
        }
    }

    pub fn dir(path: &str) -> Self {
        LayerEntry {
            path: format!("{}/", path.trim_end_matches('/')),
            mode: 0o755,
            content: None,
        }
    }
}

/// An image of one tar+gzip layer holding `entries` (in that order), for
/// `platform` (architecture, os), with `process` as the image config's
/// `config` (User, Entrypoint, Env: image-spec `config.md`), tagged `tag`
/// in the layout's index. The filter's image and the controller's are both
/// this one function, so both are reproducible the same way.
pub fn image(
    entries: &[LayerEntry],
    platform: (&str, &str),
    process: Value,
    tag: &str,
) -> Result<ImageLayout, OciError> {
    check_tag(tag)?;
    let tar = layer_tar(entries)?;
    let layer = gzip(&tar)?;
    // The image config: rootfs names the uncompressed layer. No `created`
    // and no history: nothing that carries a clock.
    let config = compact(&json!({
        "architecture": platform.0,
        "os": platform.1,
        "config": process,
        "rootfs": {"type": "layers", "diff_ids": [digest(&tar)]}
    }));
    let manifest = compact(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(CONFIG_MEDIA_TYPE, &config),
        "layers": [descriptor(LAYER_MEDIA_TYPE, &layer)]
    }));
    let mut index_entry = descriptor(MANIFEST_MEDIA_TYPE, &manifest);
    index_entry["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
    let index = compact(&json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [index_entry]
    }));
    let manifest_digest = digest(&manifest);
    let layer_digest = digest(&layer);
    let mut files = vec![
        (
            "oci-layout".to_string(),
            compact(&json!({"imageLayoutVersion": "1.0.0"})),
        ),
        ("index.json".to_string(), index),
    ];
    for blob in [config, layer, manifest] {
        files.push((blob_path(&digest(&blob)), blob));
    }
    Ok(ImageLayout {
        manifest_digest,
        layer_digest,
        files,
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// `blobs/sha256/<hex>` for `sha256:<hex>`.
fn blob_path(digest: &str) -> String {
    format!("blobs/{}", digest.replacen(':', "/", 1))
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({"mediaType": media_type, "digest": digest(bytes), "size": bytes.len()})
}

fn compact(value: &Value) -> Vec<u8> {
    // serde_json writes a map's keys in a fixed order, so equal values give
    // equal bytes.
    value.to_string().into_bytes()
}

/// The OCI distribution-spec tag grammar: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), OciError> {
    let ok_first = tag
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    let ok_rest = tag
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok_first && ok_rest && tag.len() <= 128 {
        Ok(())
    } else {
        Err(OciError::BadTag(tag.to_string()))
    }
}

/// A ustar archive of `entries` with fixed metadata (mtime 0, uid/gid 0,
/// no user names).
fn layer_tar(entries: &[LayerEntry]) -> Result<Vec<u8>, OciError> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        header.set_path(&entry.path)?;
        header.set_mode(entry.mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let content: &[u8] = entry.content.as_deref().unwrap_or_default();
        header.set_size(content.len() as u64);
        header.set_entry_type(if entry.content.is_some() {
            tar::EntryType::Regular
        } else {
            tar::EntryType::Directory
        });
        header.set_cksum();
        builder.append(&header, content)?;
    }
    Ok(builder.into_inner()?)
}

/// gzip with no file name, mtime 0 and a fixed level, so only the input
/// decides the output.
fn gzip(bytes: &[u8]) -> Result<Vec<u8>, OciError> {
    let mut encoder = GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), Compression::default());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn module(extra: &[u8]) -> Vec<u8> {
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        wasm.extend_from_slice(extra);
        wasm
    }

    fn file<'a>(layout: &'a ImageLayout, path: &str) -> &'a [u8] {
        &layout.files.iter().find(|(p, _)| p == path).unwrap().1
    }

    #[test]
    fn the_same_module_gives_the_same_image_and_another_module_another() {
        let one = wasm_image(&module(b"one"), "v1").unwrap();
        assert_eq!(one, wasm_image(&module(b"one"), "v1").unwrap());
        let other = wasm_image(&module(b"two"), "v1").unwrap();
        assert_ne!(one.manifest_digest, other.manifest_digest);
        // The tag lives in the index only: the image itself is unchanged.
        let retagged = wasm_image(&module(b"one"), "v2").unwrap();
        assert_eq!(one.manifest_digest, retagged.manifest_digest);
    }

    #[test]
    fn the_layer_is_a_gzipped_tar_holding_plugin_wasm_with_fixed_metadata() {
        let wasm = module(&[7; 3000]);
        let layout = wasm_image(&wasm, "latest").unwrap();
        let manifest: Value =
            serde_json::from_slice(file(&layout, &blob_path(&layout.manifest_digest))).unwrap();
        assert_eq!(manifest["layers"][0]["mediaType"], LAYER_MEDIA_TYPE);
        assert_eq!(
            manifest["layers"][0]["digest"],
            layout.layer_digest.as_str()
        );
        let layer = file(&layout, &blob_path(&layout.layer_digest));
        assert_eq!(&layer[4..8], &[0, 0, 0, 0], "gzip mtime is zero");
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(layer)
            .read_to_end(&mut tar)
            .unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let mut entries = archive.entries().unwrap();
        let mut entry = entries.next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str(), Some(PLUGIN_FILE));
        assert_eq!(entry.header().mtime().unwrap(), 0);
        assert_eq!(entry.header().mode().unwrap(), 0o444);
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        assert_eq!(content, wasm);
        assert!(entries.next().is_none(), "one entry only");
        let config: Value = serde_json::from_slice(file(
            &layout,
            &blob_path(manifest["config"]["digest"].as_str().unwrap()),
        ))
        .unwrap();
        assert_eq!(config["rootfs"]["diff_ids"][0], digest(&tar));
    }

    #[test]
    fn every_blob_is_stored_under_its_own_digest_and_the_index_names_the_tag() {
        let layout = wasm_image(&module(b""), "1.0.0-rc_1").unwrap();
        for (path, bytes) in &layout.files {
            if let Some(hex) = path.strip_prefix("blobs/sha256/") {
                assert_eq!(digest(bytes), format!("sha256:{hex}"));
            }
        }
        let index: Value = serde_json::from_slice(file(&layout, "index.json")).unwrap();
        assert_eq!(
            index["manifests"][0]["digest"],
            layout.manifest_digest.as_str()
        );
        assert_eq!(
            index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
            "1.0.0-rc_1"
        );
    }

    #[test]
    fn refuses_what_is_not_wasm_and_bad_tags() {
        assert!(matches!(
            wasm_image(b"MZ\x90\0", "v1"),
            Err(OciError::NotWasm)
        ));
        for tag in ["", "-x", ".x", "a/b", "a:b", &"a".repeat(129)] {
            assert!(
                matches!(wasm_image(&module(b""), tag), Err(OciError::BadTag(_))),
                "{tag:?}"
            );
        }
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
