//! Where a read command (`resolve`, `explain`, `status`, `graph`) gets its
//! objects: the files of `-f`, or with no `-f` the cluster the kubeconfig
//! names, read as the controller reads it (docs/semantics.md section 13).
//! The header line and the note on kinds not served go to standard error,
//! so that standard output stays the command's own.

use std::path::PathBuf;

use attache_controller::kube::cluster::{self, ClusterObjects, Target};
use attache_controller::snapshot;
use attache_core::source::SourceDoc;

use super::{CliError, LimitArgs};

/// The cluster to read when there is no `-f`: kubectl's flags.
#[derive(Debug, clap::Args, Clone, Default)]
pub struct ClusterArgs {
    /// The kubeconfig to read the cluster from [default: KUBECONFIG,
    /// ~/.kube/config, then the pod's service account].
    #[arg(long, value_name = "FILE", global = false)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: its current context].
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Read namespaced objects of this namespace only (Gateways, routes and
    /// policies elsewhere are then not seen) [default: all namespaces].
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Read every namespace (the default; for kubectl's habit).
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
}

impl ClusterArgs {
    /// The cluster to read, each kind's list bounded as a file is
    /// (`--max-input-bytes`).
    pub fn target(&self, limits: &LimitArgs) -> Target {
        Target {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            max_list_bytes: limits.max_input_bytes,
        }
    }

    /// Whether any flag chose a cluster (they mean nothing with files).
    fn chose_cluster(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }
}

/// Input of a read command: files, or the cluster.
#[derive(Debug, clap::Args, Clone)]
pub struct SourceArgs {
    /// Manifest files or directories (recursive; .yaml, .yml, .json), or '-'
    /// for standard input. Repeatable. Without -f the cluster is read.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// What was read from the cluster, beside the documents.
#[derive(Debug, Clone)]
pub struct LiveRead {
    pub objects: ClusterObjects,
    /// Objects the reader refused (each named on standard error).
    pub unreadable: usize,
}

/// Documents, and the cluster they came from when they did.
pub struct Read {
    pub docs: Vec<SourceDoc>,
    pub live: Option<LiveRead>,
}

impl SourceArgs {
    /// Reads the files, or the cluster when there are none.
    /// `namespace_filters_files`: whether `-n` means something with files
    /// (it filters what `status` shows); elsewhere it is refused there.
    pub fn read(&self, namespace_filters_files: bool) -> Result<Read, CliError> {
        if self.files.is_empty() {
            let (docs, live) = read_cluster(&self.cluster, &self.limits)?;
            return Ok(Read {
                docs,
                live: Some(live),
            });
        }
        let namespace_given = self.cluster.namespace.is_some() && !namespace_filters_files;
        if self.cluster.chose_cluster() || namespace_given || self.cluster.all_namespaces {
            return Err(CliError::Usage(
                "--kubeconfig, --context, -n and -A choose what is read from the cluster, and -f reads files instead\n  hint: leave out -f to read the cluster, or leave out the cluster flags"
                    .into(),
            ));
        }
        let docs = self.limits.read(&self.files, Default::default())?;
        if docs.is_empty() {
            return Err(CliError::EmptyInput(super::shown_paths(&self.files)));
        }
        Ok(Read { docs, live: None })
    }
}

/// Lists the cluster, prints the header line and the note on kinds not
/// served, and reads every object through the controller's reader.
pub fn read_cluster(
    args: &ClusterArgs,
    limits: &LimitArgs,
) -> Result<(Vec<SourceDoc>, LiveRead), CliError> {
    let target = args.target(limits);
    let (connection, objects) = cluster::read_blocking(&target)?;
    eprintln!(
        "{}",
        header(&connection.context, &connection.server, &target, &objects)
    );
    if !objects.not_served.is_empty() {
        let kinds: Vec<String> = objects
            .not_served
            .iter()
            .map(|k| format!("{} ({})", k.kind, k.api_version()))
            .collect();
        eprintln!(
            "note: not served by the API server, so skipped: {}",
            kinds.join(", ")
        );
    }
    // Read whole (the controller keeps only what it parsed of each): the
    // read commands parse these documents once and may show any field.
    let (docs, unreadable) =
        snapshot::read_whole(objects.objects.iter().map(|(kind, value)| (*kind, value)));
    for why in &unreadable {
        eprintln!("error: {why}; skipped");
    }
    Ok((
        docs,
        LiveRead {
            unreadable: unreadable.len(),
            objects,
        },
    ))
}

/// `# context C, server S, all namespaces; resourceVersion: Kind N, ...`:
/// what was read, so that a report can be traced to the cluster's state.
/// Reads are not atomic across kinds, hence one version per kind.
pub fn header(context: &str, server: &str, target: &Target, objects: &ClusterObjects) -> String {
    let scope = match &target.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "all namespaces".to_string(),
    };
    let versions: Vec<String> = objects
        .listed
        .iter()
        .map(|l| format!("{} {}", l.kind.kind, l.resource_version))
        .collect();
    format!(
        "# context {context}, server {server}, {scope}; resourceVersion: {}",
        versions.join(", ")
    )
}
