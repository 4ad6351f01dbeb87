//! `unsafe` lives only in the two ABI adapters: both filter crates deny it
//! crate-wide (the compiler enforces that), and allow it back only on the
//! adapter modules named here. A new `#[allow(unsafe_code)]` anywhere else
//! in them fails this test.

// A test crate: its helpers fail the test by panicking.
#![allow(clippy::unwrap_used)]

use std::path::Path;

/// (crate, the modules that may hold `unsafe`).
const ADAPTERS: [(&str, &[&str]); 2] = [
    ("attache-filter", &["abi", "proxy"]),
    ("attache-module", &["abi", "exports", "fake_envoy"]),
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn unsafe_code_is_allowed_only_on_the_abi_adapters() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (name, adapters) in ADAPTERS {
        let src = crates.join(name).join("src");
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        assert!(lib.contains("#![deny(unsafe_code)]"), "{name}: lib.rs");
        let mut allowed: Vec<String> = Vec::new();
        let mut files = Vec::new();
        sources(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if !line.contains("allow(unsafe_code)") {
                    continue;
                }
                // An inner attribute allows its own file's module.
                if line.trim_start().starts_with("#![") {
                    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
                    assert_ne!(stem, "lib", "{name}: unsafe allowed crate-wide");
                    allowed.push(stem);
                    continue;
                }
                // The item it applies to: the next line that is not an attribute.
                let item = lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim_start().starts_with("#["))
                    .unwrap_or(&"");
                let module_item = item.trim_start().starts_with("mod ")
                    || item.trim_start().starts_with("pub mod ");
                assert!(
                    file.ends_with("lib.rs") && module_item,
                    "{}: allow(unsafe_code) on `{item}`",
                    file.display()
                );
                let module = item
                    .trim()
                    .trim_start_matches("pub ")
                    .trim_start_matches("mod ");
                allowed.push(module.trim_end_matches(';').to_string());
            }
        }
        allowed.sort();
        allowed.dedup();
        let mut expected: Vec<String> = adapters.iter().map(|a| a.to_string()).collect();
        expected.sort();
        assert_eq!(allowed, expected, "{name}");
    }
}
