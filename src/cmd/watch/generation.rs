//! Where `attache watch` keeps its generation number: in the ECDS file's
//! `version_info`, as `g<N>-<content digest>`, so that a restarted watch
//! continues from the generation Envoy has (and `/config_dump` shows which
//! generation is loaded). `render ecds` writes the digest alone.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// Prefixes the generation to the rendered `version_info`.
pub fn stamp_generation(ecds: &mut Value, generation: u64) {
    let digest = ecds["version_info"].as_str().unwrap_or_default().to_owned();
    ecds["version_info"] = Value::String(format!("g{generation}-{digest}"));
}

/// The generation in an ECDS file written by `attache watch`; `None` when
/// there is no file, or it was not written by watch. The file may be large
/// (10,000 routes: megabytes), so only its end is read: keys are written
/// sorted, and `version_info` sorts last.
pub fn generation_of_ecds_file(path: &Path) -> Option<u64> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    file.take(4096).read_to_end(&mut tail).ok()?;
    let tail = String::from_utf8_lossy(&tail);
    let at = tail.rfind("version_info")?;
    let rest = tail[at + "version_info".len()..].trim_start_matches(['"', ':', ' ']);
    let digits: String = rest
        .strip_prefix('g')?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generation_round_trips_through_yaml_and_json_files() {
        let dir = std::env::temp_dir().join(format!("attache-watch-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ecds =
            serde_json::json!({"version_info": "00ff", "resources": ["x".repeat(10_000)]});
        stamp_generation(&mut ecds, 41);
        assert_eq!(ecds["version_info"], "g41-00ff");
        let yaml = dir.join("e.yaml");
        std::fs::write(&yaml, serde_yaml_ng::to_string(&ecds).unwrap()).unwrap();
        assert_eq!(generation_of_ecds_file(&yaml), Some(41));
        let json = dir.join("e.json");
        std::fs::write(&json, serde_json::to_string_pretty(&ecds).unwrap()).unwrap();
        assert_eq!(generation_of_ecds_file(&json), Some(41));
        // Rendered by `render ecds` (no generation), or absent: none.
        std::fs::write(&yaml, "version_info: 00ff\n").unwrap();
        assert_eq!(generation_of_ecds_file(&yaml), None);
        assert_eq!(generation_of_ecds_file(&dir.join("missing.yaml")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
