//! Reading manifests: files, directories (recursive), `-` for stdin;
//! multi-document YAML and `kind: List`. Everything here is I/O or syntax;
//! meaning is the core's job.

use std::path::{Path, PathBuf};

use attache_core::source::{Origin, SourceDoc};
use serde::Deserialize;

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
}

/// Reads every path in order. Directories are walked recursively in sorted
/// order, taking `.yaml`, `.yml` and `.json` files, so output is
/// deterministic whatever the file system returns.
pub fn read_paths(paths: &[PathBuf]) -> Result<Vec<SourceDoc>, InputError> {
    let mut docs = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
                InputError::Read {
                    path: "-".into(),
                    source,
                }
            })?;
            parse_text("-", &text, &mut docs)?;
        } else {
            read_path(path, &mut docs)?;
        }
    }
    Ok(docs)
}

fn read_path(path: &Path, docs: &mut Vec<SourceDoc>) -> Result<(), InputError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => InputError::Missing {
            path: shown.clone(),
        },
        _ => InputError::Read {
            path: shown.clone(),
            source,
        },
    })?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| InputError::Read {
                path: shown.clone(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let is_manifest = entry
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if entry.is_dir() || is_manifest {
                read_path(&entry, docs)?;
            }
        }
        return Ok(());
    }
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_text(&shown, &text, docs)
}

/// Splits a YAML stream into objects; empty documents are skipped and the
/// items of a `kind: List` become objects of their own.
pub fn parse_text(file: &str, text: &str, docs: &mut Vec<SourceDoc>) -> Result<(), InputError> {
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let origin = Origin {
            file: file.to_string(),
            document: index + 1,
            item: None,
        };
        let value = serde_json::Value::deserialize(document).map_err(|e| InputError::Yaml {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::Object(ref map)
                if map.get("kind").and_then(|k| k.as_str()) == Some("List") =>
            {
                let items = map
                    .get("items")
                    .and_then(|i| i.as_array())
                    .cloned()
                    .unwrap_or_default();
                for (item, value) in items.into_iter().enumerate() {
                    docs.push(SourceDoc {
                        origin: Origin {
                            item: Some(item),
                            ..origin.clone()
                        },
                        value,
                    });
                }
            }
            value => docs.push(SourceDoc { origin, value }),
        }
    }
    Ok(())
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
    fn bad_yaml_names_file_and_document() {
        let mut docs = Vec::new();
        let err = parse_text("x.yaml", "kind: A\n---\nkind: [unclosed\n", &mut docs).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.yaml (document 2): not valid YAML"),
            "{err}"
        );
    }
}
