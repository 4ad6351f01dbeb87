//! `attache watch` as a user runs it: it rewrites on change, keeps the last
//! good files on broken input, never lets `--out` claim what the ECDS file
//! does not have, retries failed writes, continues generations across
//! restarts, and skips FIFOs among its inputs (issue 8, docs/security.md).

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::{attache_ok as ok, copy_dir, scratch, workspace};

fn resolved_example() -> Value {
    serde_json::from_slice(&ok(&["resolve", "-f", "examples/shop"]).stdout).unwrap()
}

/// A copy of examples/shop to watch, and where the outputs go.
struct Setup {
    dir: std::path::PathBuf,
    input: std::path::PathBuf,
    out: std::path::PathBuf,
    ecds: std::path::PathBuf,
    stderr: std::path::PathBuf,
}

impl Setup {
    fn new(label: &str) -> Setup {
        let dir = scratch(label);
        let input = dir.join("input");
        copy_dir(&workspace().join("examples/shop"), &input);
        Setup {
            out: dir.join("attache.json"),
            ecds: dir.join("attache-ecds.json"),
            stderr: dir.join("watch.err"),
            input,
            dir,
        }
    }
}

/// Waits until `path` holds `needle`.
fn wait_for_text(path: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "never saw {needle:?} in:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `attache watch` whose stdout lines arrive on a channel.
struct Watch {
    child: std::process::Child,
    lines: Receiver<String>,
}

impl Watch {
    fn start(input: &Path, out: &Path, ecds: &Path, stderr: &Path) -> Watch {
        Watch::start_with(input, out, ecds, stderr, &[])
    }

    /// As [`Watch::start`], with `extra` arguments.
    fn start_with(input: &Path, out: &Path, ecds: &Path, stderr: &Path, extra: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_attache"))
            .args(["watch", "--interval-ms", "50", "--wasm", "/w/f.wasm"])
            .args(extra)
            .arg("-f")
            .arg(input)
            .arg("--out")
            .arg(out)
            .arg("--ecds")
            .arg(ecds)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next stdout line; generous limit, this only guards against a hang.
    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("attache watch printed nothing")
    }

    /// Waits until the watcher has said `why` on stderr (it acted on the
    /// input), then checks that it wrote nothing.
    fn assert_refused(&self, stderr: &Path, why: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(stderr)
            .unwrap_or_default()
            .contains(why)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "attache watch never said {why:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match self.lines.try_recv() {
            Err(TryRecvError::Empty) => {}
            other => panic!("attache watch wrote after a refused input: {other:?}"),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_rewrites_on_change_and_keeps_the_last_good_files_on_broken_input() {
    let Setup {
        dir,
        input,
        out,
        ecds,
        stderr,
    } = Setup::new("watch");
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 1 (9 routes)");
    let first: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(first, resolved_example());
    let rendered = ok(&[
        "render",
        "ecds",
        "-f",
        input.to_str().unwrap(),
        "--wasm",
        "/w/f.wasm",
    ]);
    // watch --ecds writes what render ecds does, with its generation in
    // version_info (so that a restarted watch continues from it).
    let mut written: Value =
        serde_json::from_slice(&std::fs::read(&ecds).unwrap()).expect("a .json name gets JSON");
    let rendered: Value = serde_yaml_ng::from_slice(&rendered.stdout).unwrap();
    assert_eq!(
        written["version_info"].as_str().unwrap(),
        format!("g1-{}", rendered["version_info"].as_str().unwrap())
    );
    written["version_info"] = rendered["version_info"].clone();
    assert_eq!(
        written, rendered,
        "watch --ecds writes what render ecds does"
    );

    // A change: a new generation with the new value in both files.
    let storefront = input.join("30-storefront.yaml");
    let original = std::fs::read_to_string(&storefront).unwrap();
    let edited = original.replace(
        "{name: x-shop-tier, value: web}",
        "{name: x-shop-tier, value: mobile}",
    );
    assert_ne!(edited, original);
    std::fs::write(input.join("edit.tmp"), &edited).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 2 (9 routes)");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("\"mobile\""));
    assert!(std::fs::read_to_string(&ecds).unwrap().contains("mobile"));

    // Broken YAML: nothing written, the reason on stderr, the files intact.
    let (good_out, good_ecds) = (std::fs::read(&out).unwrap(), std::fs::read(&ecds).unwrap());
    std::fs::write(
        input.join("edit.tmp"),
        "kind: RoutePolicy\nmetadata: {name: broken\n",
    )
    .unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    watch.assert_refused(&stderr, "keeping generation 2");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        said.contains("30-storefront.yaml (document 1): not valid YAML"),
        "{said}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), good_out);
    assert_eq!(std::fs::read(&ecds).unwrap(), good_ecds);

    // An invalid edit of one policy (not a syntax error): that policy keeps
    // its last good version (generation 2's, header mobile), as an API
    // server would refuse the edit, and the generation is written.
    let invalid = original.replace("request: 5s", "request: 5 seconds");
    assert_ne!(invalid, original);
    std::fs::write(input.join("edit.tmp"), &invalid).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 3 (9 routes)");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(said.contains("spec.defaults.timeouts.request"), "{said}");
    assert!(
        said.contains("note: keeping the last good RoutePolicy shop/storefront: its edit at"),
        "{said}"
    );
    let kept: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let good: Value = serde_json::from_slice(&good_out).unwrap();
    assert_eq!(
        kept, good,
        "the policy's last good version, not the broken edit"
    );

    // Fixed again (back to the first state): written again.
    std::fs::write(input.join("edit.tmp"), &original).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 4 (9 routes)");
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(&out).unwrap()).unwrap(),
        first
    );
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_ecds_file_leaves_out_alone_and_is_retried_until_it_works() {
    let dir = scratch("watch-retry");
    let input = dir.join("input");
    copy_dir(&workspace().join("examples/shop"), &input);
    // The ECDS file's directory is a regular file: writing fails, even as
    // root (chmod would not stop root).
    let blocked = dir.join("ecds-dir");
    std::fs::write(&blocked, "not a directory").unwrap();
    let (out, ecds, stderr) = (
        dir.join("attache.json"),
        blocked.join("attache-ecds.json"),
        dir.join("watch.err"),
    );
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    let said = wait_for_text(&stderr, "trying again in");
    assert!(said.contains("generation 1 not written"), "{said}");
    assert!(said.contains("nothing was written"), "{said}");
    assert!(
        !out.exists(),
        "--out must not claim what Envoy does not have"
    );
    // A second failure waits longer (back-off).
    wait_for_text(&stderr, "trying again in 100 ms");
    assert!(
        watch.lines.try_recv().is_err(),
        "nothing announced while failing"
    );

    // Space is back: the same generation is written, without any input change.
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir(&blocked).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 1 (9 routes)");
    assert!(ecds.exists());
    let document: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(document, resolved_example());
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn generations_continue_from_the_ecds_file_after_a_restart() {
    let Setup {
        dir,
        input,
        out,
        ecds,
        stderr,
    } = Setup::new("watch-restart");
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 1 (9 routes)");
    drop(watch);
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 2 (9 routes)");
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fifo_in_the_input_directory_is_skipped_and_updates_go_on() {
    let Setup {
        dir,
        input,
        out,
        ecds,
        stderr,
    } = Setup::new("watch-fifo");
    let status = Command::new("mkfifo")
        .arg(input.join("zz-pipe.yaml"))
        .status()
        .unwrap();
    assert!(status.success());
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 1 (9 routes)");
    let said = wait_for_text(&stderr, "is a FIFO, not a regular file");
    assert!(said.contains("zz-pipe.yaml"), "{said}");
    let storefront = input.join("30-storefront.yaml");
    let edited = std::fs::read_to_string(&storefront).unwrap().replace(
        "{name: x-shop-tier, value: web}",
        "{name: x-shop-tier, value: mobile}",
    );
    std::fs::write(input.join("edit.tmp"), &edited).unwrap();
    std::fs::rename(input.join("edit.tmp"), &storefront).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 2 (9 routes)");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("\"mobile\""));
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without the admin, the order of the xDS writes rests on `--settle-ms`
/// alone; the watch says so once, at start, and not when it has the admin.
#[test]
fn xds_dir_without_envoy_admin_warns_once_that_only_settle_ms_orders_the_writes() {
    const WARNING: &str = "warning: --xds-dir without --envoy-admin";
    let Setup {
        dir,
        input,
        out,
        ecds,
        stderr,
    } = Setup::new("watch-no-admin");
    let xds = dir.join("xds");
    let xds = xds.to_str().unwrap();
    let common = [
        "--xds-dir",
        xds,
        "--backend",
        "*=127.0.0.1:9000",
        "--settle-ms",
        "0",
    ];
    let watch = Watch::start_with(&input, &out, &ecds, &stderr, &common);
    assert_eq!(watch.next_line(), "wrote generation 1 (9 routes)");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(said.matches(WARNING).count(), 1, "{said}");
    assert!(said.contains("--settle-ms (0 ms)"), "{said}");
    drop(watch);

    // With the admin given (here nobody listens: Envoy not started yet,
    // which is no reason to warn either), no such warning.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let admin = closed.local_addr().unwrap().to_string();
    drop(closed);
    let with_admin = [&common[..], &["--envoy-admin", admin.as_str()]].concat();
    let watch = Watch::start_with(&input, &out, &ecds, &stderr, &with_admin);
    assert_eq!(watch.next_line(), "wrote generation 2 (9 routes)");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(!said.contains(WARNING), "{said}");
    assert!(!said.contains("refuses connections"), "{said}");
    drop(watch);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A large ECDS file named for YAML costs Envoy at every edit; the watch
/// says so once a run, not at every write.
#[test]
fn a_large_yaml_named_ecds_file_gets_one_notice_a_run() {
    const NOTICE: &str = "note: the ECDS file ";
    let dir = scratch("watch-large-yaml");
    let input = dir.join("input");
    std::fs::create_dir_all(&input).unwrap();
    let routes = input.join("routes.yaml");
    std::fs::write(&routes, support::routes_with_policies(500)).unwrap();
    let (out, ecds, stderr) = (
        dir.join("attache.json"),
        dir.join("attache-ecds.yaml"),
        dir.join("watch.err"),
    );
    let watch = Watch::start(&input, &out, &ecds, &stderr);
    assert_eq!(watch.next_line(), "wrote generation 1 (500 routes)");
    std::fs::write(input.join("edit.tmp"), support::routes_with_policies(501)).unwrap();
    std::fs::rename(input.join("edit.tmp"), &routes).unwrap();
    assert_eq!(watch.next_line(), "wrote generation 2 (501 routes)");
    drop(watch);
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(said.matches(NOTICE).count(), 1, "{said}");
    let yaml_name = format!("{NOTICE}{} is ", ecds.display());
    let json_name = format!("name it {}", dir.join("attache-ecds.json").display());
    assert!(said.contains(&yaml_name), "{said}");
    assert!(said.contains(&json_name), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}
