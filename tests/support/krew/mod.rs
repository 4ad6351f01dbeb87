//! What krew checks in a plugin manifest and does on
//! `kubectl krew install --manifest=FILE --archive=FILE`, written from
//! krew's source so that deploy/krew/attache.yaml can be tested here, where
//! krew itself cannot be installed. Read from kubernetes-sigs/krew at commit
//! db921d5b457a5c1f2b3cfe0ea4fab9964450bb51 (each rule names its file).
//!
//! Stricter than krew in two places, both said where they apply: unknown
//! manifest fields are refused (krew ignores them, so a misspelt optional
//! field would be lost without a word), and `bin` must be executable.

mod install;
mod rules;

pub use install::{install, license_installed};
pub use rules::{selects, validate_manifest_file};

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Deserialize;

/// pkg/index/types.go, `Plugin`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugin {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: PluginSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    pub name: String,
}

/// pkg/index/types.go, `PluginSpec`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginSpec {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub short_description: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub caveats: String,
    /// Optional for krew; this project has no public home page yet.
    #[serde(default)]
    #[allow(dead_code)]
    pub homepage: String,
    #[serde(default)]
    pub platforms: Vec<Platform>,
}

/// pkg/index/types.go, `Platform`: `files` absent and `files: []` differ.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    #[serde(default)]
    pub uri: String,
    #[serde(default)]
    pub sha256: String,
    pub selector: Option<Selector>,
    pub files: Option<Vec<FileOperation>>,
    #[serde(default)]
    pub bin: String,
}

/// metav1.LabelSelector, the part krew's selectors use.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<Requirement>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOperation {
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
}

/// A rule of krew's that a manifest or an install broke.
#[derive(Debug, thiserror::Error)]
pub enum KrewError {
    #[error("{path}: not a krew Plugin manifest")]
    Parse {
        path: String,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("manifest file name must end in .yaml, not {0:?}")]
    Extension(String),
    #[error("apiVersion {0:?} is not krew.googlecontainertools.github.com/v1alpha2")]
    ApiVersion(String),
    #[error("kind {0:?} is not Plugin")]
    Kind(String),
    #[error("plugin name {0:?} must match ^[\\w-]+$ and not be a reserved Windows name")]
    UnsafeName(String),
    #[error("plugin is named {actual:?} but its file says {expected:?}")]
    NameMismatch { expected: String, actual: String },
    #[error("spec.shortDescription is empty or has a line break")]
    ShortDescription,
    #[error("spec.platforms is empty")]
    NoPlatform,
    #[error("spec.version {0:?} is not a v-prefixed semver")]
    Version(String),
    #[error("spec.platforms[{0}]: {1}")]
    Platform(usize, &'static str),
    #[error("spec.platforms[{index}].selector key {key:?} is not os or arch")]
    SelectorKey { index: usize, key: String },
    #[error("spec.platforms[{0}].selector matches no platform krew supports")]
    UnusedPlatform(usize),
    #[error("spec.platforms[{0:?}] select the same {1}")]
    Overlap(Vec<usize>, String),
    #[error("no spec.platforms entry selects {0}")]
    NoMatchingPlatform(String),
    #[error("checksum does not match, want: {want}, got {got}")]
    Checksum { want: String, got: String },
    #[error("the archive is not a tar.gz (the only kind this model reads)")]
    NotGzip,
    #[error("refusing to unpack archive entry {0:?}")]
    SuspiciousEntry(String),
    #[error("unable to handle tar entry {0:?} of type {1:?}")]
    EntryType(String, char),
    #[error("files: to {0:?} is not a clean path")]
    UncleanTo(String),
    #[error("files: no files in the plugin archive matched {0:?}")]
    NoMatch(String),
    #[error("files: {0:?} leaves the archive or the installation directory")]
    OutOfBounds(String),
    #[error("files: glob {0:?} is beyond this model (a pattern only in its last part)")]
    GlobBeyondModel(String),
    #[error("bin {0:?} cannot be found in the extracted archive")]
    BinMissing(String),
    #[error("bin {0:?} is not executable (this model's check; krew links it anyway)")]
    BinNotExecutable(String),
    #[error("no LICENSE (or alike) file among the installed files {0:?}")]
    NoLicense(Vec<String>),
}

/// Reads a manifest as krew does (indexscanner.ReadPluginFromFile).
pub fn read_manifest(path: &Path) -> Result<Plugin, KrewError> {
    let shown = path.display().to_string();
    let text = fs::read_to_string(path).map_err(|source| KrewError::Read {
        path: shown.clone(),
        source,
    })?;
    serde_yaml_ng::from_str(&text).map_err(|source| KrewError::Parse {
        path: shown,
        source,
    })
}
