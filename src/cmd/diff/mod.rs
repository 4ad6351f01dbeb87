//! `attache diff`: what a change to policies or routes does to every route
//! of one Gateway, before it merges. The comparison is the core's
//! (`attache_core::diff`); this shell reads OLD and NEW (OLD also from a git
//! revision), prints the result and picks the exit code.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use attache_core::contract::Document;
use attache_core::diff::{diff, ChangeKind, Diff};
use attache_core::source::SourceDoc;
use attache_core::topology::ObjectKey;
use attache_core::{Severity, StatusReport};

use super::source::ClusterArgs;
use super::{parse_key, CliError, LimitArgs};
use crate::error::BadFlagValue;
use crate::input::ReadLimits;
use crate::output::{pretty_json, print_stdout, report};

mod cluster;
mod text;

/// Exit code of `--exit-code` / `--fail-on` when a change was found.
pub const CHANGED: u8 = 4;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  attache diff old/ new/                              # two checkouts of the manifests
  attache diff --cluster -f pr/                       # the live cluster, and with pr/ applied
  attache diff --git origin/main manifests/           # the same paths at a git revision as OLD
  attache diff --git HEAD~1 manifests/ --fail-on timeout-shorter,policy-invalid
  attache diff old.yaml new.yaml -o json

Change kinds for --fail-on (docs/diff.md defines each): entry-added,
entry-removed, match-changed, timeout-shorter, timeout-longer, retries-increase,
retries-decrease, retry-changed, header-changed, policy-invalid,
policy-conflicted, policy-target-not-found, policy-recovered, any.

Exit codes: 0 nothing changed (or changes, without --exit-code/--fail-on);
1 unreadable input, no such Gateway or a failing git read; 3 with --strict when
NEW has errors or warnings; 4 with --exit-code when anything effective changed,
or with --fail-on when a change of a listed kind did (--fail-on narrows
--exit-code).")]
pub struct Args {
    /// OLD and NEW: files, directories (recursive) or '-'; with --git, NEW only.
    #[arg(value_name = "PATH", num_args = 1..=2, required_unless_present = "cluster")]
    pub paths: Vec<PathBuf>,
    /// OLD is the live cluster, NEW the cluster with -f's objects laid over
    /// it (each replaces the object of the same kind, namespace and name,
    /// or is added; one annotated attache.dev/delete: "true" is removed).
    #[arg(long, conflicts_with_all = ["paths", "git"], requires = "change")]
    pub cluster: bool,
    /// With --cluster: the change's manifests (files, directories or '-'). Repeatable.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "PATH",
        requires = "cluster"
    )]
    pub change: Vec<PathBuf>,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
    /// Read OLD as NEW's paths at this git revision (through the `git` command).
    #[arg(long, value_name = "REV")]
    pub git: Option<String>,
    /// The Gateway; may be left out when NEW has exactly one.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_key)]
    pub gateway: Option<ObjectKey>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Exit 4 when anything effective changed.
    #[arg(long)]
    pub exit_code: bool,
    /// Exit 4 only when a change of one of these kinds happened (comma-separated).
    #[arg(long, value_name = "KINDS", value_delimiter = ',', value_parser = parse_kind)]
    pub fail_on: Vec<KindFilter>,
    /// Exit 3 when NEW has any error or warning.
    #[command(flatten)]
    pub strict: super::strict::Strict,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// One `--fail-on` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindFilter {
    Any,
    Kind(ChangeKind),
}

fn parse_kind(word: &str) -> Result<KindFilter, BadFlagValue> {
    if word == "any" {
        return Ok(KindFilter::Any);
    }
    ChangeKind::parse(word)
        .map(KindFilter::Kind)
        .ok_or_else(|| {
            let all: Vec<&str> = ChangeKind::ALL.iter().map(|k| k.name()).collect();
            BadFlagValue(format!("expected any or one of {}", all.join(", ")))
        })
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (old_inputs, new_inputs) = if args.cluster {
        cluster::load(&args.cluster_args, &args.change, &args.limits)?
    } else {
        load_both(&args)?
    };
    // The Gateway is NEW's; one that NEW deleted is OLD's.
    let gateway = match attache_core::select_gateway(&new_inputs, args.gateway.as_ref()) {
        Ok(key) => key,
        Err(err) => attache_core::select_gateway(&old_inputs, args.gateway.as_ref())
            .map_err(|_| CliError::Gateway(err))?,
    };
    let (old, new) = std::thread::scope(|scope| {
        let old = scope.spawn(|| Side::resolve(&old_inputs, &gateway));
        (old.join(), Side::resolve(&new_inputs, &gateway))
    });
    let old = old.map_err(|_| CliError::Usage("resolving OLD failed".into()))??;
    let new = new?;
    report(&new_inputs, &new.diagnostics);
    let problems = new_inputs
        .diagnostics
        .iter()
        .chain(&new.diagnostics)
        .filter(|d| d.severity != Severity::Note)
        .count();
    let what = format!("NEW has {problems} problem(s) reported above");
    args.strict.check(0, problems, &what)?;
    let found = diff(
        &gateway.to_string(),
        old.document.as_ref(),
        new.document.as_ref(),
        &old.status,
        &new.status,
    );
    match args.output {
        Format::Json => print_stdout(&pretty_json(&found)?)?,
        Format::Text => print_stdout(&text::render(&found))?,
    }
    let code = ExitCode::from(exit_code(&args, &found));
    // Both sides' inputs and resolutions are hundreds of MB of small
    // allocations at 10,000 routes; the process ends here, and freeing them
    // one by one cost a tenth of the CPU time (measured: docs/diff.md).
    std::mem::forget((old_inputs, new_inputs, old, new));
    Ok(code)
}

/// OLD and NEW from files or a git revision. They are independent: read
/// and parsed on two cores.
fn load_both(args: &Args) -> Result<(attache_core::Inputs, attache_core::Inputs), CliError> {
    let (old_path, new_path) = paths(args)?;
    let (old_inputs, new_inputs) = std::thread::scope(|scope| {
        let old = scope.spawn(|| load(args, old_path));
        (old.join(), load(args, Manifests::Files(new_path)))
    });
    let old_inputs = old_inputs.map_err(|_| CliError::Usage("reading OLD failed".into()))??;
    Ok((old_inputs, new_inputs?))
}

fn exit_code(args: &Args, found: &Diff) -> u8 {
    let kinds = found.kinds();
    let failing = if !args.fail_on.is_empty() {
        args.fail_on.iter().any(|f| match f {
            KindFilter::Any => !found.is_empty(),
            KindFilter::Kind(k) => kinds.contains(k),
        })
    } else {
        args.exit_code && !found.is_empty()
    };
    if failing {
        CHANGED
    } else {
        0
    }
}

/// One side of the comparison, resolved.
struct Side {
    /// `None` when this side does not have the Gateway: every entry is then
    /// added (OLD) or removed (NEW).
    document: Option<Document>,
    status: StatusReport,
    diagnostics: Vec<attache_core::Diagnostic>,
}

impl Side {
    fn resolve(inputs: &attache_core::Inputs, gateway: &ObjectKey) -> Result<Side, CliError> {
        let (document, diagnostics) = match attache_core::resolve(inputs, gateway) {
            Ok(resolved) => (Some(resolved.resolution.document), resolved.diagnostics),
            Err(
                attache_core::ResolveError::GatewayNotFound { .. }
                | attache_core::ResolveError::NoGateway,
            ) => (None, Vec::new()),
            Err(err) => return Err(err.into()),
        };
        Ok(Side {
            document,
            status: attache_core::policy_status(inputs),
            diagnostics,
        })
    }
}

/// Where one side is read from: files, or NEW's paths at a git revision.
#[derive(Clone, Copy)]
enum Manifests<'a> {
    Files(&'a PathBuf),
    AtRevision(&'a str, &'a PathBuf),
}

/// OLD and NEW's paths, as given.
fn paths(args: &Args) -> Result<(Manifests<'_>, &PathBuf), CliError> {
    match (&args.git, args.paths.as_slice()) {
        (Some(rev), [new]) => Ok((Manifests::AtRevision(rev, new), new)),
        (None, [old, new]) => Ok((Manifests::Files(old), new)),
        (Some(_), _) => Err(CliError::Usage(
            "with --git REV, give only NEW: OLD is NEW's paths at REV".into(),
        )),
        (None, _) => Err(CliError::Usage(
            "give OLD and NEW, or --git REV and NEW".into(),
        )),
    }
}

/// Reads and parses one side within the input limits. Only NEW's
/// diagnostics are printed later: OLD's are not what the change introduces.
fn load(args: &Args, from: Manifests<'_>) -> Result<attache_core::Inputs, CliError> {
    let docs = match from {
        Manifests::Files(path) => args
            .limits
            .read(std::slice::from_ref(path), ReadLimits::default())?,
        Manifests::AtRevision(rev, path) => read_git(rev, path, &args.limits)?,
    };
    Ok(args.limits.parse(&docs))
}

/// The manifests under `path` at git revision `rev`, read with the `git`
/// command rather than a library: it is on every machine that has the
/// repository, and it honours the user's git configuration (worktrees,
/// alternates, safe.directory). The revision is pinned to one tree first,
/// so every file comes from the same snapshot; `ls-tree -l` gives each
/// blob's size, checked against the input limit before the blob is read,
/// and the text goes through the reader's own YAML parser.
fn read_git(rev: &str, path: &Path, limits: &LimitArgs) -> Result<Vec<SourceDoc>, CliError> {
    if rev.starts_with('-') {
        // It would reach git as an option.
        return Err(CliError::Git(
            format!("--git {rev:?}: a revision cannot start with '-'"),
            "name a branch, tag or commit, e.g. --git origin/main",
        ));
    }
    if path.as_os_str() == "-" {
        return Err(CliError::Usage(
            "with --git REV, NEW is files or directories in the repository, not '-'".into(),
        ));
    }
    let tree = text(git(
        &["rev-parse", "--verify", &format!("{rev}^{{tree}}")],
        None,
    )?)?;
    let tree = tree.trim();
    let listed = git(
        &["ls-tree", "-r", "-z", "-l", "--full-name", tree, "--"],
        Some(path),
    )?;
    let mut docs = Vec::new();
    for record in listed.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let record = String::from_utf8_lossy(record);
        let Some(blob) = Blob::parse(&record) else {
            continue;
        };
        if !crate::input::is_manifest(Path::new(blob.file)) {
            continue;
        }
        let shown = format!("{rev}:{}", blob.file);
        match (blob.mode, blob.kind) {
            ("120000", _) => {
                return Err(CliError::Git(
                    format!("{shown}: is a symbolic link in git; not followed"),
                    "diff two checkouts instead: attache diff OLD NEW",
                ))
            }
            (_, "blob") => {}
            // A submodule: its files are not in this repository.
            _ => continue,
        }
        if blob.size > limits.max_input_bytes {
            return Err(crate::input::InputError::TooLarge {
                path: shown,
                limit: limits.max_input_bytes,
            }
            .into());
        }
        let bytes = git(&["cat-file", "blob", blob.object], None)?;
        let text = String::from_utf8(bytes).map_err(|e| crate::input::InputError::Read {
            path: shown.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        crate::input::parse_text(&shown, &text, &mut docs)?;
    }
    if docs.is_empty() {
        return Err(CliError::Git(
            format!("git: no manifests under {} at {rev}", path.display()),
            "check the revision and that the path existed there",
        ));
    }
    Ok(docs)
}

/// One record of `git ls-tree -l`: `MODE TYPE OBJECT SIZE<TAB>PATH`.
struct Blob<'a> {
    mode: &'a str,
    kind: &'a str,
    object: &'a str,
    /// `-` (not a blob) reads as too large to matter: such records are skipped.
    size: u64,
    file: &'a str,
}

impl<'a> Blob<'a> {
    fn parse(record: &'a str) -> Option<Blob<'a>> {
        let (meta, file) = record.split_once('\t')?;
        let mut fields = meta.split_whitespace();
        let (mode, kind, object, size) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        Some(Blob {
            mode,
            kind,
            object,
            size: size.parse().unwrap_or(u64::MAX),
            file,
        })
    }
}

fn text(bytes: Vec<u8>) -> Result<String, CliError> {
    String::from_utf8(bytes).map_err(|_| {
        CliError::Git(
            "git: output is not UTF-8".into(),
            "run attache diff --git inside the repository",
        )
    })
}

/// Runs `git ARGS [PATH]` and returns its standard output.
fn git(args: &[&str], path: Option<&Path>) -> Result<Vec<u8>, CliError> {
    let mut command = Command::new("git");
    command.args(args);
    if let Some(path) = path {
        command.arg(path);
    }
    let output = command.output().map_err(|err| {
        CliError::Git(
            format!("cannot run git: {err}"),
            "--git needs the git command on PATH",
        )
    })?;
    if !output.status.success() {
        return Err(CliError::Git(
            format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "run attache diff --git inside the repository, with a revision it has",
        ));
    }
    Ok(output.stdout)
}
