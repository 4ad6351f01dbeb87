//! Reading manifests: files, directories (recursive), `-` for stdin;
//! multi-document YAML and `kind: List`. Everything here is I/O or syntax;
//! meaning is the core's job.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use attache_core::source::{Origin, SourceDoc};
use serde::Deserialize;

use crate::strict_value::StrictValue;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{origin}: not valid YAML: {message}\n  hint: check indentation and quoting near that line; documents are separated by '---'")]
    Yaml { origin: Origin, message: String },
    #[error("{path}: no such file or directory\n  hint: -f takes files, directories (read recursively) or '-' for standard input")]
    Missing { path: String },
    #[error("{path}: is {what}, not a regular file; not read\n  hint: only regular files are read (and directories by -f); reading a FIFO or a device could block or never end")]
    NotRegular { path: String, what: &'static str },
    #[error("{path}: is larger than {limit} bytes; not read\n  hint: raise --max-input-bytes, or split manifests into several files")]
    TooLarge { path: String, limit: u64 },
}

/// How much input may cost (docs/semantics.md, "What a policy may not do").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Bytes of one file, or of standard input.
    pub max_input_bytes: u64,
    /// Skip (with a warning on stderr) rather than refuse a non-regular file
    /// found inside a directory: `attache watch` keeps serving updates when
    /// someone drops a FIFO into the directory it watches.
    pub skip_irregular_in_directories: bool,
}

/// The default for `--max-input-bytes`: 64 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            skip_irregular_in_directories: false,
        }
    }
}

/// Reads every path in order. Directories are walked recursively in sorted
/// order, taking `.yaml`, `.yml` and `.json` files, so output is
/// deterministic whatever the file system returns.
pub fn read_paths(paths: &[PathBuf], limits: ReadLimits) -> Result<Vec<SourceDoc>, InputError> {
    let mut reader = Reader {
        limits,
        docs: Vec::new(),
        seen_dirs: HashSet::new(),
    };
    for path in paths {
        if path.as_os_str() == "-" {
            let text = read_bounded("-", std::io::stdin().lock(), limits.max_input_bytes)?;
            parse_text("-", &text, &mut reader.docs)?;
        } else {
            reader.read_path(path, false)?;
        }
    }
    Ok(reader.docs)
}

struct Reader {
    limits: ReadLimits,
    docs: Vec<SourceDoc>,
    /// Directories already walked (canonical), so a symlink loop ends.
    seen_dirs: HashSet<PathBuf>,
}

impl Reader {
    fn read_path(&mut self, path: &Path, in_directory: bool) -> Result<(), InputError> {
        let shown = path.display().to_string();
        let meta = metadata(path, &shown)?;
        if meta.is_dir() {
            return self.read_dir(path, &shown);
        }
        let bytes = match read_regular(path, &shown, &meta, self.limits.max_input_bytes) {
            Err(err @ InputError::NotRegular { .. })
                if in_directory && self.limits.skip_irregular_in_directories =>
            {
                eprintln!("warning: {}", err.to_string().replace('\n', "\n  "));
                return Ok(());
            }
            read => read?,
        };
        let text = utf8(&shown, bytes)?;
        parse_text(&shown, &text, &mut self.docs)
    }

    fn read_dir(&mut self, path: &Path, shown: &str) -> Result<(), InputError> {
        let read_err = |source| InputError::Read {
            path: shown.to_string(),
            source,
        };
        let canonical = std::fs::canonicalize(path).map_err(read_err)?;
        if !self.seen_dirs.insert(canonical) {
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_err)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            if entry.is_dir() || is_manifest(&entry) {
                self.read_path(&entry, true)?;
            }
        }
        Ok(())
    }
}

/// Whether a file found in a directory is read as manifests: `.yaml`,
/// `.yml` or `.json` (the one definition; `attache watch` watches the same).
pub fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// One regular file of at most `limit` bytes, as bytes, checked as `-f`
/// checks its files: for inputs that are not manifests (`package oci
/// --wasm`), so that `/dev/zero` or a FIFO is refused there too.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let shown = path.display().to_string();
    let meta = metadata(path, &shown)?;
    read_regular(path, &shown, &meta, limit)
}

/// `metadata` follows symlinks: a link to /dev/zero is a device.
fn metadata(path: &Path, shown: &str) -> Result<std::fs::Metadata, InputError> {
    std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => InputError::Missing {
            path: shown.to_string(),
        },
        _ => InputError::Read {
            path: shown.to_string(),
            source,
        },
    })
}

/// A FIFO or device is refused before it is opened (opening a FIFO blocks),
/// and a file over `limit` before it is read.
fn read_regular(
    path: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    limit: u64,
) -> Result<Vec<u8>, InputError> {
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            path: shown.to_string(),
            what: file_kind(meta),
        });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: shown.to_string(),
            limit,
        });
    }
    let file = std::fs::File::open(path).map_err(|source| InputError::Read {
        path: shown.to_string(),
        source,
    })?;
    read_bounded_bytes(shown, file, limit)
}

/// Reads at most `limit` bytes; more is an error rather than a file that
/// grows (or a device) filling memory.
fn read_bounded(shown: &str, source: impl Read, limit: u64) -> Result<String, InputError> {
    utf8(shown, read_bounded_bytes(shown, source, limit)?)
}

fn read_bounded_bytes(shown: &str, source: impl Read, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    source
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Read {
            path: shown.to_string(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: shown.to_string(),
            limit,
        });
    }
    Ok(bytes)
}

fn utf8(shown: &str, bytes: Vec<u8>) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| InputError::Read {
        path: shown.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

/// What a non-regular file is, for the message.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Splits a YAML stream into objects; empty documents are skipped and the
/// items of a list (`kind: List`, or a typed list such as `HTTPRouteList`)
/// become objects of their own.
pub fn parse_text(file: &str, text: &str, docs: &mut Vec<SourceDoc>) -> Result<(), InputError> {
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let origin = Origin {
            file: file.to_string(),
            document: index + 1,
            item: None,
        };
        let StrictValue(value) =
            StrictValue::deserialize(document).map_err(|e| InputError::Yaml {
                origin: origin.clone(),
                message: e.to_string(),
            })?;
        if value.is_null() {
            continue;
        }
        let list = value.as_object().and_then(|map| {
            let item_kind = list_item_kind(map)?;
            let items = map.get("items").and_then(|i| i.as_array());
            Some((item_kind, map.get("apiVersion"), items))
        });
        let Some((item_kind, api_version, items)) = list else {
            docs.push(SourceDoc { origin, value });
            continue;
        };
        for (item, value) in items.into_iter().flatten().enumerate() {
            let mut value = value.clone();
            if !item_kind.is_empty() {
                typed_list_item(&mut value, api_version, item_kind);
            }
            docs.push(SourceDoc {
                origin: Origin {
                    item: Some(item),
                    ..origin.clone()
                },
                value,
            });
        }
    }
    Ok(())
}

/// The kind of a list's items: `Some("")` for a plain `List` (each item
/// names its own kind), `Some("HTTPRoute")` for a typed `HTTPRouteList`, as
/// the API server returns a collection; `None` for anything else. A typed
/// list must carry an `items` array, so that a kind which merely ends in
/// `List` is not taken for one.
fn list_item_kind(map: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    let kind = map.get("kind")?.as_str()?;
    if kind == "List" {
        return Some("");
    }
    let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty())?;
    map.get("items")?.as_array()?;
    Some(item_kind)
}

/// The API server leaves `apiVersion` and `kind` out of a typed list's
/// items (the list names them once); an item that names its own keeps them.
fn typed_list_item(
    value: &mut serde_json::Value,
    api_version: Option<&serde_json::Value>,
    item_kind: &str,
) {
    let Some(item) = value.as_object_mut() else {
        return;
    };
    if let Some(api_version) = api_version {
        item.entry("apiVersion")
            .or_insert_with(|| api_version.clone());
    }
    item.entry("kind")
        .or_insert_with(|| serde_json::Value::String(item_kind.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_and_lists_keep_their_origin() {
        let mut docs = Vec::new();
        parse_text(
            "in.yaml",
            "kind: Gateway\n---\n---\nkind: List\nitems:\n- kind: A\n- kind: B\n",
            &mut docs,
        )
        .unwrap();
        let origins: Vec<String> = docs.iter().map(|d| d.origin.to_string()).collect();
        assert_eq!(
            origins,
            [
                "in.yaml (document 1)",
                "in.yaml (document 3, items[0])",
                "in.yaml (document 3, items[1])"
            ]
        );
    }

    #[test]
    fn a_typed_list_gives_its_items_the_list_s_api_version_and_kind() {
        let mut docs = Vec::new();
        let text = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRouteList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- metadata: {name: a, namespace: shop}\n- apiVersion: gateway.networking.k8s.io/v1beta1\n  kind: HTTPRoute\n  metadata: {name: b, namespace: shop}\n";
        parse_text("routes.yaml", text, &mut docs).unwrap();
        let read: Vec<(String, String, String)> = docs
            .iter()
            .map(|d| {
                (
                    d.origin.to_string(),
                    d.value["apiVersion"].as_str().unwrap_or("").to_string(),
                    d.value["kind"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (
                    "routes.yaml (document 1, items[0])".to_string(),
                    "gateway.networking.k8s.io/v1".to_string(),
                    "HTTPRoute".to_string()
                ),
                (
                    "routes.yaml (document 1, items[1])".to_string(),
                    "gateway.networking.k8s.io/v1beta1".to_string(),
                    "HTTPRoute".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_kind_ending_in_list_without_items_is_an_object() {
        let mut docs = Vec::new();
        parse_text("x.yaml", "kind: AllowList\nspec: {}\n", &mut docs).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["kind"], "AllowList");
    }

    #[test]
    fn bad_yaml_names_file_and_document() {
        let mut docs = Vec::new();
        let err = parse_text("x.yaml", "kind: A\n---\nkind: [unclosed\n", &mut docs).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.yaml (document 2): not valid YAML"),
            "{err}"
        );
    }
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("attache-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn duplicate_keys_are_an_error_naming_the_key() {
        let mut docs = Vec::new();
        let err = parse_text(
            "p.yaml",
            "kind: A\n---\nspec:\n  timeouts: {request: 1s, request: 60s}\n",
            &mut docs,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("p.yaml (document 2): not valid YAML"),
            "{text}"
        );
        assert!(text.contains("duplicate key \"request\""), "{text}");
    }

    #[test]
    fn non_string_keys_read_as_kubernetes_reads_them() {
        let mut docs = Vec::new();
        parse_text("k.yaml", "labels: {80: http, true: yes}\n", &mut docs).unwrap();
        assert_eq!(
            docs[0].value,
            serde_json::json!({"labels": {"80": "http", "true": "yes"}})
        );
    }

    #[test]
    fn a_fifo_is_refused_without_being_opened() {
        let dir = scratch("fifo");
        let fifo = dir.join("in.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Opening a FIFO with no writer would block this test forever.
        let err = read_paths(std::slice::from_ref(&fifo), ReadLimits::default()).unwrap_err();
        assert!(
            err.to_string().contains("is a FIFO, not a regular file"),
            "{err}"
        );
        // Inside a directory, watch's limits skip it and read the rest.
        std::fs::write(dir.join("ok.yaml"), "kind: A\n").unwrap();
        let limits = ReadLimits {
            skip_irregular_in_directories: true,
            ..ReadLimits::default()
        };
        let docs = read_paths(std::slice::from_ref(&dir), limits).unwrap();
        assert_eq!(docs.len(), 1);
        let err = read_paths(std::slice::from_ref(&dir), ReadLimits::default()).unwrap_err();
        assert!(matches!(err, InputError::NotRegular { .. }), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused() {
        let dir = scratch("zero");
        let link = dir.join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_paths(&[link], ReadLimits::default()).unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused() {
        let dir = scratch("size");
        let file = dir.join("big.yaml");
        std::fs::write(&file, "#".repeat(799) + "\n").unwrap();
        let limits = ReadLimits {
            max_input_bytes: 799,
            ..ReadLimits::default()
        };
        let err = read_paths(std::slice::from_ref(&file), limits).unwrap_err();
        assert!(
            err.to_string().contains("is larger than 799 bytes"),
            "{err}"
        );
        let limits = ReadLimits {
            max_input_bytes: 800,
            ..ReadLimits::default()
        };
        assert!(read_paths(&[file], limits).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reading_stops_at_the_limit_whatever_the_source_claims() {
        let err = read_bounded("-", std::io::repeat(b'a'), 1024).unwrap_err();
        assert!(
            matches!(err, InputError::TooLarge { limit: 1024, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_symlink_loop_between_directories_ends() {
        let dir = scratch("loop");
        std::fs::write(dir.join("a.yaml"), "kind: A\n").unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("again")).unwrap();
        let docs = read_paths(std::slice::from_ref(&dir), ReadLimits::default()).unwrap();
        assert_eq!(docs.len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
