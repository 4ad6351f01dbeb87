//! validate-krew-manifest's checks of a manifest's shape.

use std::collections::BTreeMap;
use std::path::Path;

use super::{KrewError, Platform, Plugin};

/// cmd/validate-krew-manifest/main.go `validateManifestFile`: the name comes
/// from the file's name, then internal/index/validation/validate.go
/// `ValidatePlugin`, then every platform is used and none overlap.
pub fn validate_manifest_file(path: &Path, plugin: &Plugin) -> Result<(), KrewError> {
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = file_name
        .strip_suffix(".yaml")
        .ok_or_else(|| KrewError::Extension(file_name.to_string()))?;
    validate_plugin(name, plugin)?;
    for (index, platform) in plugin.spec.platforms.iter().enumerate() {
        let selects_any = SUPPORTED.iter().any(|env| selects(platform, *env));
        if !selects_any {
            return Err(KrewError::UnusedPlatform(index));
        }
    }
    for env in SUPPORTED {
        let matching: Vec<usize> = (plugin.spec.platforms.iter().enumerate())
            .filter(|(_, p)| selects(p, *env))
            .map(|(i, _)| i)
            .collect();
        if matching.len() > 1 {
            return Err(KrewError::Overlap(matching, format!("{}/{}", env.0, env.1)));
        }
    }
    Ok(())
}

/// validate.go `ValidatePlugin`, in its order.
pub fn validate_plugin(name: &str, plugin: &Plugin) -> Result<(), KrewError> {
    // pkg/constants/constants.go: CurrentAPIVersion, PluginKind.
    if plugin.api_version != "krew.googlecontainertools.github.com/v1alpha2" {
        return Err(KrewError::ApiVersion(plugin.api_version.clone()));
    }
    if plugin.kind != "Plugin" {
        return Err(KrewError::Kind(plugin.kind.clone()));
    }
    if !is_safe_plugin_name(name) {
        return Err(KrewError::UnsafeName(name.to_string()));
    }
    if plugin.metadata.name != name {
        return Err(KrewError::NameMismatch {
            expected: name.to_string(),
            actual: plugin.metadata.name.clone(),
        });
    }
    let short = &plugin.spec.short_description;
    if short.is_empty() || short.contains(['\r', '\n']) {
        return Err(KrewError::ShortDescription);
    }
    if plugin.spec.platforms.is_empty() {
        return Err(KrewError::NoPlatform);
    }
    if !is_krew_semver(&plugin.spec.version) {
        return Err(KrewError::Version(plugin.spec.version.clone()));
    }
    for (index, platform) in plugin.spec.platforms.iter().enumerate() {
        validate_platform(index, platform)?;
    }
    Ok(())
}

/// validate.go `IsSafePluginName`: `^[\w-]+$` (Go's \w is ASCII) and not
/// a reserved Windows file name.
fn is_safe_plugin_name(name: &str) -> bool {
    const WINDOWS_FORBIDDEN: [&str; 22] = [
        "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
        "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
    ];
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    !name.is_empty()
        && name.chars().all(word)
        && !WINDOWS_FORBIDDEN
            .iter()
            .any(|w| w.eq_ignore_ascii_case(name))
}

/// internal/installation/semver/version.go `Parse`: a leading `v`, then
/// k8s.io/apimachinery's `ParseSemantic`: exactly three numeric components
/// without leading zeros, then an optional `-pre` and `+build`.
pub fn is_krew_semver(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let end = rest.find(['-', '+']).unwrap_or(rest.len());
    let (numbers, extra) = rest.split_at(end);
    let components: Vec<&str> = numbers.split('.').collect();
    let numeric = |c: &&str| {
        !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) && (*c == "0" || !c.starts_with('0'))
    };
    let identifiers = |s: &str| {
        s.split('.')
            .all(|i| !i.is_empty() && i.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    };
    let (pre, build) = match extra.split_once('+') {
        Some((pre, build)) => (pre, Some(build)),
        None => (extra, None),
    };
    components.len() == 3
        && components.iter().all(numeric)
        && (pre.is_empty() || pre.strip_prefix('-').is_some_and(identifiers))
        && build.is_none_or(identifiers)
}

/// validate.go `validatePlatform`, `validateFiles`, `validateSelector`.
fn validate_platform(index: usize, platform: &Platform) -> Result<(), KrewError> {
    let broken = |why| Err(KrewError::Platform(index, why));
    if platform.uri.is_empty() {
        return broken("`uri` has to be set");
    }
    // validate.go sha256Pattern: ^[a-f0-9]{64}$ (lower case only).
    let sha = &platform.sha256;
    if sha.len() != 64
        || !sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return broken("`sha256` must be 64 lower-case hex digits");
    }
    if platform.bin.is_empty() {
        return broken("`bin` has to be set");
    }
    if let Some(files) = &platform.files {
        if files.is_empty() {
            return broken("`files` has to be unspecified or non-empty");
        }
        if files.iter().any(|f| f.from.is_empty() || f.to.is_empty()) {
            return broken("`files`: `from` and `to` have to be set");
        }
    }
    let Some(selector) = &platform.selector else {
        return broken("nil selector is not supported");
    };
    let expressions = selector.match_expressions.as_deref().unwrap_or_default();
    if selector.match_labels.is_none() && expressions.is_empty() {
        return broken("empty selector is not supported");
    }
    let label_keys = selector.match_labels.iter().flat_map(|l| l.keys());
    for key in label_keys.chain(expressions.iter().map(|e| &e.key)) {
        if key != "os" && key != "arch" {
            return Err(KrewError::SelectorKey {
                index,
                key: key.clone(),
            });
        }
    }
    if selector
        .match_labels
        .as_ref()
        .is_some_and(BTreeMap::is_empty)
    {
        return broken("`matchLabels` specified but empty");
    }
    if selector
        .match_expressions
        .as_ref()
        .is_some_and(Vec::is_empty)
    {
        return broken("`matchExpressions` specified but empty");
    }
    Ok(())
}

/// validate-krew-manifest's `allPlatforms`: every <os, arch> krew knows.
const SUPPORTED: &[(&str, &str)] = &[
    ("windows", "386"),
    ("windows", "amd64"),
    ("windows", "arm64"),
    ("linux", "386"),
    ("linux", "amd64"),
    ("linux", "arm"),
    ("linux", "arm64"),
    ("linux", "ppc64le"),
    ("darwin", "386"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
];

/// A label selector over the labels `os` and `arch`
/// (internal/installation/platform.go `matchPlatform`).
pub fn selects(platform: &Platform, (os, arch): (&str, &str)) -> bool {
    let Some(selector) = &platform.selector else {
        return false;
    };
    let label = |key: &str| match key {
        "os" => Some(os),
        "arch" => Some(arch),
        _ => None,
    };
    let labels_match = (selector.match_labels.iter().flatten())
        .all(|(key, value)| label(key) == Some(value.as_str()));
    let expressions_match = (selector.match_expressions.iter().flatten()).all(|r| {
        let value = label(&r.key);
        let listed = value.is_some_and(|v| r.values.iter().any(|w| w == v));
        match r.operator.as_str() {
            "In" => listed,
            "NotIn" => !listed,
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}
