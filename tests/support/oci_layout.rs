//! Reading an OCI image layout the way a registry client does (index.json,
//! then the manifest, the config and the layer blobs by digest), for the
//! image tests (tests/package_oci.rs, tests/package_controller.rs).

#![allow(dead_code)] // each test binary reads the parts it checks

use std::io::Read;
use std::path::Path;

use serde_json::Value;

/// The image the layout's index names first.
pub struct Image {
    /// The manifest's digest (`sha256:<hex>`).
    pub digest: String,
    pub manifest: Value,
    pub config: Value,
}

/// A blob of the layout by digest.
pub fn blob(layout: &Path, digest: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap()
}

fn json_blob(layout: &Path, digest: &str) -> Value {
    serde_json::from_slice(&blob(layout, digest)).unwrap()
}

/// The first image of the layout's index.
pub fn first_image(layout: &Path) -> Image {
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap().to_owned();
    let manifest = json_blob(layout, &digest);
    let config = json_blob(layout, manifest["config"]["digest"].as_str().unwrap());
    Image {
        digest,
        manifest,
        config,
    }
}

/// The uncompressed tar of the image's layer `i` (tar+gzip).
pub fn layer_tar(layout: &Path, image: &Image, i: usize) -> Vec<u8> {
    let compressed = blob(
        layout,
        image.manifest["layers"][i]["digest"].as_str().unwrap(),
    );
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(compressed.as_slice())
        .read_to_end(&mut tar)
        .unwrap();
    tar
}
