//! What `kubectl krew install --manifest --archive` does with them.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{selects, FileOperation, KrewError, Plugin};

/// What `install --manifest --archive` leaves behind.
pub struct Installed {
    /// `KREW_ROOT/bin/kubectl-<name>`, the symlink kubectl finds.
    pub link: PathBuf,
    /// `KREW_ROOT/store/<name>/<version>`.
    pub install_dir: PathBuf,
}

/// `kubectl krew install --manifest --archive` on linux/amd64 into
/// `krew_root` (internal/installation/install.go `Install` and `install`).
pub fn install(plugin: &Plugin, archive: &Path, krew_root: &Path) -> Result<Installed, KrewError> {
    let env = ("linux", "amd64");
    let platform = (plugin.spec.platforms.iter())
        .find(|p| selects(p, env))
        .ok_or_else(|| KrewError::NoMatchingPlatform(format!("{}/{}", env.0, env.1)))?;
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| KrewError::Read { path, source }
    };
    // internal/download/downloader.go `download` and verifier.go: the
    // --archive file stands in for the download and is checked the same way.
    let bytes = fs::read(archive).map_err(io(archive))?;
    let got = format!("{:x}", Sha256::digest(&bytes));
    if got != platform.sha256 {
        return Err(KrewError::Checksum {
            want: platform.sha256.clone(),
            got,
        });
    }
    let staging = krew_root.join("downloads");
    extract_tar_gz(&bytes, &staging)?;
    // install.go `applyDefaults`: no `files` means everything.
    let default_files = [FileOperation {
        from: "*".into(),
        to: ".".into(),
    }];
    let files = platform.files.as_deref().unwrap_or(&default_files);
    let install_dir = krew_root
        .join("store")
        .join(&plugin.metadata.name)
        .join(&plugin.spec.version);
    // move.go `moveToInstallDir`: moved into a temporary directory, which
    // becomes the installation directory only when every move succeeded.
    let moving = krew_root.join("moving");
    fs::create_dir_all(&moving).map_err(io(&moving))?;
    for op in files {
        for (from, to) in move_targets(&staging, &moving, op)? {
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::rename(&from, &to).map_err(io(&from))?;
        }
    }
    fs::create_dir_all(krew_root.join("store").join(&plugin.metadata.name))
        .map_err(io(krew_root))?;
    fs::rename(&moving, &install_dir).map_err(io(&install_dir))?;
    // install.go: `bin` must stay inside the installation directory, and
    // `createOrUpdateLink` refuses a bin that is not there.
    let bin = clean(&format!("{}/{}", install_dir.display(), platform.bin));
    if !is_sub_path(&install_dir.display().to_string(), &bin) {
        return Err(KrewError::OutOfBounds(platform.bin.clone()));
    }
    let bin = PathBuf::from(bin);
    let mode = fs::metadata(&bin)
        .map_err(|_| KrewError::BinMissing(platform.bin.clone()))?
        .permissions()
        .mode();
    if mode & 0o111 == 0 {
        return Err(KrewError::BinNotExecutable(platform.bin.clone()));
    }
    // install.go `pluginNameToBin`: kubectl-<name>, dashes as underscores.
    let bin_dir = krew_root.join("bin");
    fs::create_dir_all(&bin_dir).map_err(io(&bin_dir))?;
    let link = bin_dir.join(format!(
        "kubectl-{}",
        plugin.metadata.name.replace('-', "_")
    ));
    std::os::unix::fs::symlink(&bin, &link).map_err(io(&link))?;
    Ok(Installed { link, install_dir })
}

/// downloader.go `extractTARGZ`: directories and regular files only, no
/// entry with `..` or a leading slash; a pax global header is skipped.
fn extract_tar_gz(bytes: &[u8], into: &Path) -> Result<(), KrewError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| KrewError::Read { path, source }
    };
    // http.DetectContentType's application/x-gzip signature.
    if !bytes.starts_with(&[0x1f, 0x8b, 0x08]) {
        return Err(KrewError::NotGzip);
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries().map_err(io(into))? {
        let mut entry = entry.map_err(io(into))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if name == "pax_global_header" {
            continue;
        }
        if name.contains("..") || name.starts_with(['/', '\\']) {
            return Err(KrewError::SuspiciousEntry(name));
        }
        let path = into.join(&name);
        let mode = entry.header().mode().map_err(io(&path))?;
        match entry.header().entry_type() {
            tar::EntryType::Directory => fs::create_dir_all(&path).map_err(io(&path))?,
            tar::EntryType::Regular => {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io(parent))?;
                }
                let mut content = Vec::new();
                entry.read_to_end(&mut content).map_err(io(&path))?;
                fs::write(&path, content).map_err(io(&path))?;
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(io(&path))?;
            }
            other => return Err(KrewError::EntryType(name, other.as_byte() as char)),
        }
    }
    Ok(())
}

/// move.go `findMoveTargets` and `getDirectMove`: `from` names a file of
/// the archive (then `to: .` keeps its name) or is a glob whose matches go
/// into the directory `to`; both must stay inside their directories.
fn move_targets(
    from_dir: &Path,
    to_dir: &Path,
    op: &FileOperation,
) -> Result<Vec<(PathBuf, PathBuf)>, KrewError> {
    if op.to != clean(&op.to) {
        return Err(KrewError::UncleanTo(op.to.clone()));
    }
    let (from_base, to_base) = (from_dir.display().to_string(), to_dir.display().to_string());
    let allowed = |from: &str, to: &str| is_sub_path(&from_base, from) && is_sub_path(&to_base, to);
    let direct = clean(&format!("{from_base}/{}", op.from));
    if Path::new(&direct).exists() {
        let name = Path::new(&direct).file_name().map(|n| n.to_string_lossy());
        let to = match (clean(&op.to).as_str(), name) {
            (".", Some(name)) => name.into_owned(),
            (to, _) => to.to_string(),
        };
        let to = clean(&format!("{to_base}/{to}"));
        if !allowed(&direct, &to) {
            return Err(KrewError::OutOfBounds(op.from.clone()));
        }
        return Ok(vec![(direct.into(), to.into())]);
    }
    let pattern = clean(&format!("{from_base}/{}", op.from));
    let (dir, last) = pattern.rsplit_once('/').unwrap_or((".", pattern.as_str()));
    if dir.contains(['*', '?', '[']) || last.contains('[') {
        return Err(KrewError::GlobBeyondModel(op.from.clone()));
    }
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| glob_matches(last.as_bytes(), n.as_bytes()))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        return Err(KrewError::NoMatch(op.from.clone()));
    }
    names.sort();
    let new_dir = clean(&format!("{to_base}/{}", op.to));
    let mut moves = Vec::new();
    for name in names {
        let (from, to) = (format!("{dir}/{name}"), format!("{new_dir}/{name}"));
        if !allowed(&from, &to) {
            return Err(KrewError::OutOfBounds(op.from.clone()));
        }
        moves.push((from.into(), to.into()));
    }
    Ok(moves)
}

/// Go's filepath.Match for `*` and `?` (a `*` never crosses a `/`).
fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_matches(&pattern[1..], name)
                || (name.first().is_some_and(|c| *c != b'/') && glob_matches(pattern, &name[1..]))
        }
        (Some(b'?'), Some(c)) if *c != b'/' => glob_matches(&pattern[1..], &name[1..]),
        (Some(p), Some(c)) if p == c => glob_matches(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// Go's filepath.Clean, lexically: no `.`, no empty part, `..` applied.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if rooted => {}
            _ => parts.push(part),
        }
    }
    match (rooted, parts.join("/")) {
        (true, joined) => format!("/{joined}"),
        (false, joined) if joined.is_empty() => ".".into(),
        (false, joined) => joined,
    }
}

/// internal/pathutil/pathutil.go `IsSubPath`: `path` is `base` or below it.
fn is_sub_path(base: &str, path: &str) -> bool {
    let (base, path) = (clean(base), clean(path));
    path == base || path.starts_with(&format!("{}/", base.trim_end_matches('/')))
}

/// validate-krew-manifest's `validateLicenseFileExists`: krew-index
/// requires a license among the installed files (krew walks the whole
/// tree; this layout is flat, so its top level is all there is).
pub fn license_installed(install_dir: &Path) -> Result<(), KrewError> {
    const LICENSES: [&str; 8] = [
        "license",
        "license.txt",
        "license.md",
        "licenses",
        "licenses.txt",
        "licenses.md",
        "copying",
        "copying.txt",
    ];
    let mut names: Vec<String> = fs::read_dir(install_dir)
        .map_err(|source| KrewError::Read {
            path: install_dir.display().to_string(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names
        .iter()
        .any(|n| LICENSES.contains(&n.to_lowercase().as_str()))
    {
        Ok(())
    } else {
        Err(KrewError::NoLicense(names))
    }
}
