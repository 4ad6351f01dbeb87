//! The controller's OCI image (`attache package controller`), built
//! without Docker: one layer holding the `attache` binary at
//! [`ENTRYPOINT`]`[0]` and, for a dynamically linked binary, its program
//! interpreter (the loader) and the shared libraries it needs, nothing
//! else. The image config names a numeric non-root user ([`USER`]) and the
//! entry point `attache controller`. Reproducible like the filter's image
//! (`attache_render::oci::image`): the same binary and libraries give the
//! same digest.
//!
//! Pure: what a binary needs is read from its ELF headers ([`needs`]); the
//! CLI finds those files and reads them.

use attache_render::oci::{image, ImageLayout, LayerEntry, OciError};
use serde_json::json;

use crate::deploy::{ENTRYPOINT, USER};

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not a 64-bit little-endian ELF executable ({0})")]
    NotElf(&'static str),
    #[error("ELF machine {0} has no OCI architecture here (x86_64 and aarch64 do)")]
    Machine(u16),
    #[error(transparent)]
    Oci(#[from] OciError),
}

/// What the loader needs to start a binary: its program interpreter
/// (`PT_INTERP`, absent for a static binary) and the `DT_NEEDED` names of its
/// dynamic section (ELF-64 object file format, "Program header" and
/// "Dynamic section").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needs {
    /// The OCI architecture (`amd64`, `arm64`).
    pub architecture: &'static str,
    pub interpreter: Option<String>,
    pub needed: Vec<String>,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A NUL-terminated string at `at`.
fn c_str(b: &[u8], at: usize) -> Option<String> {
    let rest = b.get(at..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// Reads what a binary or shared library needs.
pub fn needs(elf: &[u8]) -> Result<Needs, ImageError> {
    if elf.get(..4) != Some(b"\x7fELF") {
        return Err(ImageError::NotElf("no ELF magic"));
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err(ImageError::NotElf("not ELFCLASS64/ELFDATA2LSB"));
    }
    let short = ImageError::NotElf("truncated headers");
    let machine = u16_at(elf, 18).ok_or(ImageError::NotElf("truncated header"))?;
    let architecture = match machine {
        62 => "amd64",
        183 => "arm64",
        other => return Err(ImageError::Machine(other)),
    };
    let (phoff, phentsize, phnum) = match (u64_at(elf, 32), u16_at(elf, 54), u16_at(elf, 56)) {
        (Some(o), Some(s), Some(n)) => (o as usize, s as usize, n as usize),
        _ => return Err(short),
    };
    let mut segments = Vec::new();
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        let segment = (|| {
            Some(Segment {
                kind: u32_at(elf, at)?,
                offset: u64_at(elf, at + 8)?,
                vaddr: u64_at(elf, at + 16)?,
                filesz: u64_at(elf, at + 32)?,
            })
        })();
        segments.push(segment.ok_or(ImageError::NotElf("truncated program headers"))?);
    }
    let interpreter = segments
        .iter()
        .find(|s| s.kind == PT_INTERP)
        .map(|s| c_str(elf, s.offset as usize).ok_or(ImageError::NotElf("bad PT_INTERP")))
        .transpose()?;
    let mut needed = Vec::new();
    if let Some(dynamic) = segments.iter().find(|s| s.kind == PT_DYNAMIC) {
        let (mut names, mut strtab) = (Vec::new(), None);
        let mut at = dynamic.offset as usize;
        let end = at + dynamic.filesz as usize;
        while at + 16 <= end {
            let (tag, value) = match (u64_at(elf, at), u64_at(elf, at + 8)) {
                (Some(t), Some(v)) => (t, v),
                _ => return Err(ImageError::NotElf("truncated dynamic section")),
            };
            match tag {
                DT_NULL => break,
                DT_NEEDED => names.push(value),
                DT_STRTAB => strtab = Some(value),
                _ => {}
            }
            at += 16;
        }
        if !names.is_empty() {
            // DT_STRTAB is an address: the file offset is found through the
            // PT_LOAD segment that maps it.
            let address = strtab.ok_or(ImageError::NotElf("DT_NEEDED without DT_STRTAB"))?;
            let table = segments
                .iter()
                .find(|s| s.kind == PT_LOAD && s.vaddr <= address && address < s.vaddr + s.filesz)
                .map(|s| address - s.vaddr + s.offset)
                .ok_or(ImageError::NotElf("DT_STRTAB outside every PT_LOAD"))?;
            for name in names {
                let name = c_str(elf, (table + name) as usize)
                    .ok_or(ImageError::NotElf("bad DT_NEEDED name"))?;
                needed.push(name);
            }
        }
    }
    Ok(Needs {
        architecture,
        interpreter,
        needed,
    })
}

/// The image: `binary` at [`ENTRYPOINT`]`[0]`, each of `libraries`
/// (absolute path in the image, bytes) at its path, the directories they
/// need, root-owned and read-only to the [`USER`] the image runs as.
pub fn controller_image(
    binary: &[u8],
    libraries: &[(String, Vec<u8>)],
    tag: &str,
) -> Result<ImageLayout, ImageError> {
    let needs = needs(binary)?;
    let mut files: Vec<(String, Vec<u8>)> = libraries
        .iter()
        .map(|(path, bytes)| (path.trim_start_matches('/').to_string(), bytes.clone()))
        .collect();
    files.push((
        ENTRYPOINT[0].trim_start_matches('/').to_string(),
        binary.to_vec(),
    ));
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    let mut dirs: Vec<String> = files
        .iter()
        .flat_map(|(path, _)| {
            let parts: Vec<&str> = path.split('/').collect();
            (1..parts.len())
                .map(|n| parts[..n].join("/"))
                .collect::<Vec<_>>()
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut entries: Vec<LayerEntry> = dirs.iter().map(|d| LayerEntry::dir(d)).collect();
    entries.extend(
        files
            .into_iter()
            .map(|(path, bytes)| LayerEntry::file(&path, 0o555, bytes)),
    );
    // `User` numeric so that the kubelet can verify runAsNonRoot with no
    // /etc/passwd in the image; no shell, so the entry point is exec form.
    let process = json!({
        "User": format!("{USER}:{USER}"),
        "Entrypoint": ENTRYPOINT,
        "Env": ["PATH=/usr/local/bin"],
        "WorkingDir": "/",
        "ExposedPorts": {format!("{}/tcp", crate::deploy::PROBE_PORT): {}},
    });
    Ok(image(
        &entries,
        (needs.architecture, "linux"),
        process,
        tag,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_64_bit_elf_is_refused() {
        for (bytes, says) in [
            (&b"MZ\x90\0"[..], "no ELF magic"),
            (&b"\x7fELF\x01\x01\x01\0"[..], "ELFCLASS64"),
            (&b"\x7fELF\x02\x01\x01\0"[..], "truncated"),
        ] {
            let err = needs(bytes).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
