//! One generation's writes as files: which file each step of
//! [`attache_render::xds::transition`] replaces (or removes), its text,
//! the version Envoy will report once it has it, and whose progress shows
//! that.

use std::path::{Path, PathBuf};

use attache_render::filter::FilterBinary;
use attache_render::xds::{self, Step, XdsLayout, XdsState};
use serde_json::Value;

use super::envoy_admin::Subscription;
use super::generation::stamp_generation;
use crate::cmd::load::{encode_for, yaml_ecds_notice};
use crate::cmd::CliError;
use crate::output::pretty_json;
use crate::output::{write_file, write_private_file};

/// Where a generation goes: the ECDS file (with the build it names) and
/// the xDS files, each when asked for.
pub struct Targets<'a> {
    pub ecds: Option<(&'a Path, &'a FilterBinary)>,
    pub xds: Option<&'a XdsLayout>,
}

pub struct FileStep {
    /// What the messages call it ("the CDS file").
    pub label: String,
    pub path: PathBuf,
    /// The text and its `version_info`; `None` removes the file.
    pub content: Option<(String, String)>,
    /// Whose progress shows Envoy applied it; `None`: nobody reads it yet.
    pub subscription: Option<Subscription>,
    pub step: Step,
}

pub fn file_steps(
    steps: Vec<Step>,
    targets: &Targets<'_>,
    generation: u64,
) -> Result<Vec<FileStep>, CliError> {
    let mut files = Vec::new();
    for step in steps {
        let file = match (&step, targets.xds) {
            (Step::Ecds(document), _) => {
                let Some((path, binary)) = targets.ecds else {
                    continue;
                };
                let mut value = attache_render::ecds::discovery_response(document, binary)
                    .map_err(attache_render::RenderError::from)?;
                stamp_generation(&mut value, generation);
                let text = encode_for(&value, Some(path))?;
                let label = "the ECDS file".to_string();
                (
                    label,
                    path.to_path_buf(),
                    Some((text, value)),
                    Some(Subscription::Ecds),
                )
            }
            (Step::Clusters(clusters), Some(layout)) => json_file(
                "the CDS file".into(),
                layout.cds_file(),
                xds::cds_response(clusters),
                Some(Subscription::Clusters),
            )?,
            (
                Step::Routes {
                    name,
                    config,
                    listener_live,
                },
                Some(layout),
            ) => json_file(
                format!("the RDS file of listener {name}"),
                layout.rds_file(name)?,
                xds::rds_response(config),
                listener_live.then(|| Subscription::Routes(name.clone())),
            )?,
            (Step::Secret { name, resource }, Some(layout)) => json_file(
                format!("the SDS file of Secret {name}"),
                layout.sds_file(name)?,
                xds::sds_response(resource),
                None,
            )?,
            (Step::Listeners(listeners), Some(layout)) => json_file(
                "the LDS file".into(),
                layout.lds_file(),
                xds::lds_response(listeners),
                Some(Subscription::Listeners),
            )?,
            (Step::RemoveRoutes(name), Some(layout)) => (
                format!("the RDS file of removed listener {name}"),
                // A name that could leave rds/ is refused, so a hostile
                // name read back from the LDS file never deletes anything.
                PathBuf::from(layout.rds_file(name)?),
                None,
                None,
            ),
            (_, None) => continue,
        };
        let (label, path, content, subscription) = file;
        files.push(FileStep {
            label,
            path,
            content: content.map(|(text, value)| {
                let version = value["version_info"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                (text, version)
            }),
            subscription,
            step,
        });
    }
    Ok(files)
}

type File = (
    String,
    PathBuf,
    Option<(String, Value)>,
    Option<Subscription>,
);

fn json_file(
    label: String,
    path: String,
    value: Value,
    subscription: Option<Subscription>,
) -> Result<File, CliError> {
    Ok((
        label,
        PathBuf::from(path),
        Some((pretty_json(&value)?, value)),
        subscription,
    ))
}

impl FileStep {
    /// Writes (atomically) or removes the file. Returns whether anything
    /// changed: a file that already holds these bytes is left alone, since
    /// Envoy would re-read it for nothing.
    pub fn apply(&self) -> Result<bool, CliError> {
        match &self.content {
            Some((text, _)) => {
                if std::fs::read(&self.path).is_ok_and(|old| old == text.as_bytes()) {
                    return Ok(false);
                }
                match self.step {
                    // It holds a private key: readable by its owner alone.
                    Step::Secret { .. } => write_private_file(&self.path, text)?,
                    _ => write_file(&self.path, text)?,
                }
                Ok(true)
            }
            None => match std::fs::remove_file(&self.path) {
                Ok(()) => Ok(true),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(source) => Err(CliError::Write {
                    path: self.path.display().to_string(),
                    source,
                }),
            },
        }
    }

    /// The notice for an ECDS file Envoy will read as YAML at a size that
    /// costs every edit ([`yaml_ecds_notice`]); `None` for any other file.
    pub fn yaml_cost_notice(&self) -> Option<String> {
        match (&self.step, &self.content) {
            (Step::Ecds(_), Some((text, _))) => yaml_ecds_notice(&self.path, text),
            _ => None,
        }
    }

    pub fn version(&self) -> &str {
        self.content.as_ref().map_or("", |(_, v)| v.as_str())
    }

    /// Notes in `has` what Envoy has once this step is applied.
    pub fn record(&self, has: &mut XdsState) {
        match &self.step {
            Step::Ecds(document) => has.document = document.clone(),
            Step::Clusters(clusters) => has.clusters = clusters.clone(),
            Step::Secret { name, resource } => {
                has.secrets.insert(name.clone(), resource.clone());
            }
            Step::Routes { name, config, .. } => {
                has.route_configs.insert(name.clone(), config.clone());
            }
            Step::Listeners(listeners) => has.listeners = listeners.clone(),
            Step::RemoveRoutes(name) => {
                has.route_configs.remove(name);
            }
        }
    }
}
