//! deploy/krew/attache.yaml, filled by scripts/krew.sh from a release
//! archive of the `attache` cargo built, is checked against krew's rules
//! and installed the way `kubectl krew install --manifest --archive` does
//! (tests/support/krew/, written from krew's source; krew itself cannot
//! run here), then run as kubectl runs the plugin.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/krew/mod.rs"]
mod krew;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use krew::{install, license_installed, read_manifest, validate_manifest_file, KrewError, Plugin};
use support::{scratch, text, workspace};

const VERSION: &str = "v0.1.0";
const BASE_URL: &str = "https://example.com/attache/releases/download/v0.1.0";

/// The release scripts/krew.sh writes: its manifest and archive.
struct Release {
    manifest: PathBuf,
    archive: PathBuf,
}

/// Runs scripts/krew.sh once for every test (it gzips a debug binary).
fn release() -> &'static Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    RELEASE.get_or_init(|| {
        let out = scratch("krew-release");
        let run = krew_sh(&[VERSION, BASE_URL, &out.display().to_string()]);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        Release {
            manifest: out.join("attache.yaml"),
            archive: out.join(format!("attache_{VERSION}_linux_amd64.tar.gz")),
        }
    })
}

fn krew_sh(args: &[&str]) -> std::process::Output {
    Command::new(workspace().join("scripts/krew.sh"))
        .args(args)
        .arg(env!("CARGO_BIN_EXE_attache"))
        .output()
        .unwrap()
}

/// The release's manifest, changed.
fn changed(change: impl Fn(&mut Plugin)) -> Plugin {
    let mut plugin = read_manifest(&release().manifest).unwrap();
    change(&mut plugin);
    plugin
}

#[test]
fn the_filled_manifest_passes_krews_checks_and_names_the_archive() {
    let release = release();
    let plugin = read_manifest(&release.manifest).unwrap();
    validate_manifest_file(&release.manifest, &plugin).unwrap();
    let platform = &plugin.spec.platforms[0];
    assert_eq!(plugin.spec.version, VERSION);
    assert!(plugin
        .spec
        .description
        .contains("kubectl attache explain --route"));
    // krew links only kubectl-attache; the caveat says how to add completion.
    assert!(plugin.spec.caveats.contains("kubectl_complete-attache"));
    assert_eq!(
        platform.uri,
        format!("{BASE_URL}/attache_{VERSION}_linux_amd64.tar.gz")
    );
    // The script fills the three placeholders and changes nothing else.
    let template = std::fs::read_to_string(workspace().join("deploy/krew/attache.yaml")).unwrap();
    let filled = template
        .replace("@VERSION@", VERSION)
        .replace("@URI@", &platform.uri)
        .replace("@SHA256@", &platform.sha256);
    assert_eq!(std::fs::read_to_string(&release.manifest).unwrap(), filled);
}

#[test]
fn installed_as_krew_does_the_plugin_says_kubectl_attache() {
    let release = release();
    let plugin = read_manifest(&release.manifest).unwrap();
    let root = scratch("krew-root");
    let installed = install(&plugin, &release.archive, &root).unwrap();
    assert_eq!(installed.link, root.join("bin/kubectl-attache"));
    assert_eq!(
        std::fs::read_link(&installed.link).unwrap(),
        installed.install_dir.join("attache")
    );
    // What validate-krew-manifest asks of krew-index plugins.
    license_installed(&installed.install_dir).unwrap();
    // kubectl runs the link by its path: argv[0] is kubectl-attache.
    let help = Command::new(&installed.link)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(
        text(&help.stdout).contains("\nUsage: kubectl attache <COMMAND>\n"),
        "{}",
        text(&help.stdout)
    );
    let usage = Command::new(&installed.link)
        .arg("explain")
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert!(
        text(&usage.stderr).contains("\nUsage: kubectl attache explain --route <NS/NAME>\n"),
        "{}",
        text(&usage.stderr)
    );
}

#[test]
fn a_wrong_sha256_is_refused_before_anything_is_unpacked() {
    let plugin = changed(|p| {
        let sha = &mut p.spec.platforms[0].sha256;
        let flipped = if sha.starts_with('0') { "1" } else { "0" };
        sha.replace_range(0..1, flipped);
    });
    let root = scratch("krew-sha-root");
    let err = install(&plugin, &release().archive, &root).err().unwrap();
    assert!(matches!(err, KrewError::Checksum { .. }), "{err}");
    assert!(!root.join("store").exists() && !root.join("bin").exists());
}

#[test]
fn a_bin_or_file_missing_from_the_archive_is_refused() {
    let plugin = changed(|p| p.spec.platforms[0].bin = "kubectl-attache".into());
    let err = install(&plugin, &release().archive, &scratch("krew-bin-root"))
        .err()
        .unwrap();
    assert!(
        matches!(&err, KrewError::BinMissing(bin) if bin == "kubectl-attache"),
        "{err}"
    );

    let plugin = changed(|p| {
        p.spec.platforms[0].files.as_mut().unwrap()[0].from = "bin/attache".into();
    });
    let root = scratch("krew-from-root");
    let err = install(&plugin, &release().archive, &root).err().unwrap();
    assert!(
        matches!(&err, KrewError::NoMatch(from) if from == "bin/attache"),
        "{err}"
    );
    assert!(!root.join("store").exists() && !root.join("bin").exists());
}

#[test]
fn without_the_license_file_op_krew_index_would_refuse_it() {
    let plugin = changed(|p| {
        p.spec.platforms[0]
            .files
            .as_mut()
            .unwrap()
            .retain(|f| f.from != "LICENSE");
    });
    let installed = install(&plugin, &release().archive, &scratch("krew-license-root")).unwrap();
    let err = license_installed(&installed.install_dir).err().unwrap();
    assert!(
        matches!(&err, KrewError::NoLicense(names) if names == &["attache"]),
        "{err}"
    );
}

/// Each of krew's manifest rules, broken once, is refused by the check.
#[test]
fn each_broken_rule_is_refused() {
    /// What breaks the rule, and whether the error is the rule's.
    type Case = (&'static str, fn(&mut Plugin), fn(&KrewError) -> bool);
    let cases: &[Case] = &[
        (
            "v1alpha1",
            |p| p.api_version = "krew.googlecontainertools.github.com/v1alpha1".into(),
            |e| matches!(e, KrewError::ApiVersion(_)),
        ),
        (
            "other name",
            |p| p.metadata.name = "attaché".into(),
            |e| matches!(e, KrewError::NameMismatch { .. }),
        ),
        (
            "no v",
            |p| p.spec.version = "0.1.0".into(),
            |e| matches!(e, KrewError::Version(_)),
        ),
        (
            "two parts",
            |p| p.spec.version = "v0.1".into(),
            |e| matches!(e, KrewError::Version(_)),
        ),
        (
            "leading zero",
            |p| p.spec.version = "v0.01.0".into(),
            |e| matches!(e, KrewError::Version(_)),
        ),
        (
            "two lines",
            |p| p.spec.short_description.push_str("\nmore"),
            |e| matches!(e, KrewError::ShortDescription),
        ),
        (
            "upper-case sha",
            |p| p.spec.platforms[0].sha256.make_ascii_uppercase(),
            |e| matches!(e, KrewError::Platform(0, _)),
        ),
        (
            "no bin",
            |p| p.spec.platforms[0].bin.clear(),
            |e| matches!(e, KrewError::Platform(0, _)),
        ),
        (
            "empty files",
            |p| p.spec.platforms[0].files = Some(Vec::new()),
            |e| matches!(e, KrewError::Platform(0, _)),
        ),
        (
            "no selector",
            |p| p.spec.platforms[0].selector = None,
            |e| matches!(e, KrewError::Platform(0, _)),
        ),
        (
            "selector key",
            |p| {
                let labels = p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .unwrap()
                    .match_labels
                    .as_mut()
                    .unwrap();
                labels.insert("distro".into(), "debian".into());
            },
            |e| matches!(e, KrewError::SelectorKey { index: 0, .. }),
        ),
        (
            "unknown os",
            |p| {
                let labels = p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .unwrap()
                    .match_labels
                    .as_mut()
                    .unwrap();
                labels.insert("os".into(), "plan9".into());
            },
            |e| matches!(e, KrewError::UnusedPlatform(0)),
        ),
        (
            "overlap",
            |p| {
                let again = p.spec.platforms[0].clone();
                p.spec.platforms.push(again);
            },
            |e| matches!(e, KrewError::Overlap(..)),
        ),
        (
            "no platform",
            |p| p.spec.platforms.clear(),
            |e| matches!(e, KrewError::NoPlatform),
        ),
    ];
    for (label, change, expected) in cases {
        let plugin = changed(change);
        // krew takes the plugin's name from the file's.
        let err = validate_manifest_file(Path::new("attache.yaml"), &plugin).err();
        assert!(err.as_ref().is_some_and(expected), "{label}: {err:?}");
    }
    // And the file's name is the plugin's.
    let plugin = read_manifest(&release().manifest).unwrap();
    let err = validate_manifest_file(Path::new("kubectl-attache.yaml"), &plugin).err();
    assert!(
        matches!(err, Some(KrewError::NameMismatch { .. })),
        "{err:?}"
    );
}

#[test]
fn the_script_refuses_what_krew_would() {
    let out = scratch("krew-refused").display().to_string();
    let run = krew_sh(&["0.1.0", BASE_URL, &out]);
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        text(&run.stderr),
        "error: VERSION 0.1.0 is not a v-prefixed semver\n  hint: v0.1.0\n"
    );
    let run = krew_sh(&[VERSION, "http://example.com/x", &out]);
    assert_eq!(run.status.code(), Some(1));
    assert!(text(&run.stderr)
        .starts_with("error: BASE_URL http://example.com/x is not an https:// URL"));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}
