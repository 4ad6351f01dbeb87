//! The pure reconcile: a snapshot of the cluster in, per Gateway the
//! plugin (WasmPlugin or TrafficExtension) it should have out
//! (docs/controller.md). No I/O and no clock:
//! the adapter (`crate::kube`) applies what this decides.
//!
//! The resolver is the one `attache resolve` runs, on the objects the one
//! reader read, so the applied configuration is what `resolve` gives for the
//! same objects (docs/semantics.md section 11).

mod memo;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use attache_core::topology::ObjectKey;
use attache_core::{DataPlane, EntryMemo, Inputs};
use attache_core::{ResolveError, Resolved};
use attache_render::wasmplugin::{
    size_problem_at, wasm_plugin_reusing, SealedPieces, WasmPluginOptions,
};
use serde_json::{json, Value};
use tracing::field::Empty;

pub use memo::Memo;
use memo::{same, Desired, Encoded, Found, Fresh};

use crate::kinds::{WatchedKind, MANAGED_BY, TRAFFIC_EXTENSION, WASM_PLUGIN, WATCHED_KINDS};
use crate::scope::Fingerprint;
use crate::serving::{serving, NotServed, Serving};
use crate::snapshot::{ReadObject, Snapshot};
use crate::warnings::{policy_warnings, PolicyWarning};

/// Istio's Gateway controller: the default `--controller-name`, since the
/// configuration is delivered as an Istio WasmPlugin.
pub const ISTIO_CONTROLLER: &str = "istio.io/gateway-controller";

/// What the controller serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Gateways whose GatewayClass has this `spec.controllerName`.
    pub controller_name: String,
    /// Only objects in these namespaces (cluster-scoped ones always); empty
    /// means every namespace.
    pub namespaces: BTreeSet<String>,
    pub plugin: WasmPluginOptions,
    /// The kind each Gateway's plugin is written as: WasmPlugin or
    /// TrafficExtension. `crate::kube::run` sets it from `--plugin-kind`
    /// and discovery (`crate::plugin_kind`).
    pub written: &'static WatchedKind,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            controller_name: ISTIO_CONTROLLER.to_string(),
            namespaces: BTreeSet::new(),
            plugin: WasmPluginOptions::default(),
            written: &WASM_PLUGIN,
        }
    }
}

/// What one Gateway needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Server-side apply this WasmPlugin: it differs from the live one.
    Apply(Value),
    /// The live WasmPlugin already is what the input gives: no write.
    Unchanged,
    /// The Gateway cannot be resolved: its live WasmPlugin (if any) stays
    /// as it was, the last good configuration (docs/semantics.md section 11).
    Keep(Kept),
}

/// Why a Gateway keeps its last applied configuration this round.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Kept {
    /// The kind written is not served (its name).
    #[error("the {0} CRD (extensions.istio.io) is not installed: is Istio installed?")]
    PluginKindMissing(&'static str),
    #[error("Gateway {gateway} cannot be resolved: {source}")]
    Unresolvable {
        gateway: ObjectKey,
        #[source]
        source: Arc<ResolveError>,
    },
    #[error("Gateway {gateway}: cannot encode its WasmPlugin: {source}")]
    Encode {
        gateway: ObjectKey,
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// `attache_render::wasmplugin::size_problem`'s sentence.
    #[error("{0}")]
    TooLarge(String),
}

impl Kept {
    /// A few fixed words for the metric's `reason` label.
    pub fn reason(&self) -> &'static str {
        match self {
            Kept::PluginKindMissing(_) => "PluginKindMissing",
            Kept::Unresolvable { .. } => "Unresolvable",
            Kept::Encode { .. } => "Encode",
            Kept::TooLarge(_) => "TooLarge",
        }
    }
}

/// Two reasons are the same when they say the same (the sources are not
/// comparable; their messages are what the user sees).
impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

/// The reconcile of every Gateway the controller serves.
#[derive(Debug)]
pub struct Plan {
    /// The parsed input, for status.
    pub inputs: Inputs,
    pub gateways: BTreeMap<ObjectKey, Outcome>,
    /// The Gateways served that were resolved this round; the others' scope
    /// did not change, so what they resolved to before stands
    /// (`crate::scope`).
    pub resolved: BTreeSet<ObjectKey>,
    /// Every Gateway of the input (served or not) with the fingerprint of
    /// its scope, for the status fold's own memo.
    pub fingerprints: BTreeMap<ObjectKey, Fingerprint>,
    /// Every Gateway in scope that is not served, with the reason.
    pub not_served: BTreeMap<ObjectKey, NotServed>,
    /// Our plugins to delete, of either kind: those whose Gateway still
    /// exists but is no longer ours (its class changed), which would keep
    /// configuring a Gateway we no longer serve; and those of the kind no
    /// longer written whose Gateway's plugin of the written kind is live
    /// and current (a switch of kinds an earlier round left half done). A
    /// deleted Gateway's plugin goes with it (ownerReference), so it is not
    /// listed here.
    pub orphans: Vec<LivePlugin>,
    /// Gateways to apply whose live plugin is of the kind no longer
    /// written: the old one is deleted once the new one is applied, and
    /// only then (`crate::plugin_kind::apply`).
    pub switching: BTreeSet<ObjectKey>,
    /// What the reader and the resolver reported, one line each, for the log.
    pub diagnostics: Vec<String>,
    /// The findings published as Events on the objects they name
    /// (`crate::warnings`).
    pub warnings: Vec<PolicyWarning>,
}

fn in_scope(config: &Config, namespace: Option<&str>) -> bool {
    config.namespaces.is_empty() || namespace.is_none_or(|ns| config.namespaces.contains(ns))
}

/// The Gateways we serve, with their uid (for the ownerReference), and why
/// each other Gateway in scope is not served.
pub fn our_gateways(config: &Config, snapshot: &Snapshot) -> Serving {
    serving(&config.controller_name, snapshot, |ns| in_scope(config, ns))
}

/// One of our live plugins: its kind and its namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePlugin {
    pub kind: &'static WatchedKind,
    pub key: ObjectKey,
}

/// The objects a round reads: every one (the usual case), or for a
/// namespaced install only those in its namespaces.
fn docs_in_scope<'a>(
    config: &'a Config,
    snapshot: &'a Snapshot,
) -> impl Iterator<Item = &'a Arc<ReadObject>> {
    // Every object is in scope unless the install is namespaced: its
    // namespace is not looked up in 20,000 documents each round.
    let namespaced = !config.namespaces.is_empty();
    snapshot.docs.iter().filter(move |d| {
        !namespaced || in_scope(config, d.doc.value["metadata"]["namespace"].as_str())
    })
}

/// The input of a round: what each object in scope gave when read,
/// assembled (a snapshot built with a fresh read cache read every one).
fn assembled(config: &Config, snapshot: &Snapshot) -> Inputs {
    // Spans name the phases a round spends its time in (the
    // `round_profile` example prints them).
    tracing::info_span!("parse")
        .in_scope(|| attache_core::assemble(docs_in_scope(config, snapshot).map(|d| &d.pieces)))
}

/// Resolves every Gateway we serve and compares with what is live: a round
/// from scratch.
pub fn reconcile(config: &Config, snapshot: &Snapshot) -> Plan {
    plan(
        config,
        snapshot,
        assembled(config, snapshot),
        &mut Memo::default(),
    )
}

/// [`reconcile`], resolving only the Gateways whose scope changed since
/// `memo` saw them (docs/controller.md, "Incremental reconcile"). The plan
/// is the one [`reconcile`] gives for the same snapshot.
pub fn reconcile_with(config: &Config, snapshot: &Snapshot, memo: &mut Memo) -> Plan {
    plan(config, snapshot, assembled(config, snapshot), memo)
}

fn plan(config: &Config, snapshot: &Snapshot, mut inputs: Inputs, memo: &mut Memo) -> Plan {
    // GEP-713: at most 16 ancestors, other controllers' entries kept and
    // counted; the policy applies under the first of its own that fit and
    // nowhere else (docs/semantics.md, "The 16-ancestor rule").
    let limiting = tracing::info_span!("ancestors").entered();
    let foreign = foreign_ancestors(snapshot);
    attache_core::limit_ancestors_with_foreign(&mut inputs, &|policy| {
        if foreign.is_empty() {
            return 0;
        }
        let key = ObjectKey {
            namespace: policy.meta.namespace.clone().unwrap_or_default(),
            name: policy.meta.name.clone(),
        };
        foreign
            .get(&(policy.kind.to_string(), key))
            .copied()
            .unwrap_or(0)
    });
    drop(limiting);
    let fingerprints = tracing::info_span!("fingerprints")
        .in_scope(|| crate::scope::fingerprints(&inputs, &snapshot.versions));
    let mut diagnostics: Vec<String> = snapshot.unreadable.clone();
    diagnostics.extend(inputs.diagnostics.iter().map(ToString::to_string));
    let mut warnings = Vec::new();
    let Serving { served, not_served } = our_gateways(config, snapshot);
    // A Gateway no longer served is forgotten: resolved again if it returns.
    memo.keep_only(&served);
    let mut gateways = BTreeMap::new();
    let mut resolved = BTreeSet::new();
    for (key, uid) in &served {
        let outcome = if snapshot.missing.contains(config.written.kind) {
            Outcome::Keep(Kept::PluginKindMissing(config.written.kind))
        } else {
            let fingerprint = fingerprints.get(key).copied();
            let current = memo
                .gateways
                .get(key)
                .is_some_and(|(was, _)| Some(*was) == fingerprint);
            // A Gateway the parser refused has no fingerprint: resolved
            // (and refused) every round, never remembered.
            let mut unremembered: Option<Desired> = None;
            // The plugin built this round, for the apply: not parsed back
            // from the text the memo keeps.
            let mut built: Option<Value> = None;
            if !current {
                resolved.insert(key.clone());
                let resolving = tracing::info_span!("resolve", gateway = %key, reused = Empty);
                let fresh = resolving.in_scope(|| {
                    let sealed = memo.sealed.entry(key.clone()).or_default();
                    let entries = memo.entries.entry(key.clone()).or_default();
                    desired(config, &inputs, key, uid, sealed, entries)
                });
                let fresh = fresh.map(|Fresh { desired, plugin }| {
                    built = Some(plugin);
                    desired
                });
                match fingerprint {
                    Some(fingerprint) => {
                        memo.gateways.insert(key.clone(), (fingerprint, fresh));
                    }
                    None => {
                        memo.gateways.remove(key);
                        unremembered = Some(fresh);
                    }
                }
            }
            let remembered = memo.gateways.get(key).map(|(_, desired)| desired);
            match remembered.or(unremembered.as_ref()) {
                None => continue,
                Some(Ok((plugin, found))) => {
                    diagnostics.extend(found.lines.iter().cloned());
                    warnings.extend(found.warnings.iter().cloned());
                    match snapshot.live_plugin(config.written, &plugin_key(key)) {
                        Some(live) if same(live, plugin) => Outcome::Unchanged,
                        _ => match built
                            .take()
                            .map_or_else(|| serde_json::from_str(&plugin.text), Ok)
                        {
                            Ok(plugin) => Outcome::Apply(plugin),
                            Err(e) => Outcome::Keep(Kept::Encode {
                                gateway: key.clone(),
                                source: Arc::new(e),
                            }),
                        },
                    }
                }
                Some(Err(why)) => Outcome::Keep(why.clone()),
            }
        };
        gateways.insert(key.clone(), outcome);
    }
    let (orphans, switching) = plugins_to_delete(config, snapshot, &inputs, &served, &gateways);
    diagnostics.dedup();
    Plan {
        inputs,
        gateways,
        resolved,
        fingerprints,
        not_served,
        orphans,
        switching,
        diagnostics,
        warnings,
    }
}

/// Our live plugins of either kind that go now ([`Plan::orphans`]), and
/// the Gateways whose plugin of the other kind goes after their apply
/// ([`Plan::switching`]). A Gateway whose configuration is kept keeps
/// whichever plugin it has: that is its last good configuration.
fn plugins_to_delete(
    config: &Config,
    snapshot: &Snapshot,
    inputs: &Inputs,
    served: &BTreeMap<ObjectKey, String>,
    outcomes: &BTreeMap<ObjectKey, Outcome>,
) -> (Vec<LivePlugin>, BTreeSet<ObjectKey>) {
    let mut orphans = Vec::new();
    let mut switching = BTreeSet::new();
    for kind in [&WASM_PLUGIN, &TRAFFIC_EXTENSION] {
        let live = snapshot.plugins.get(kind.kind).into_iter().flatten();
        for (key, live) in live.filter(|(_, live)| managed_by_us(live)) {
            let Some(gateway) = owner_gateway(live) else {
                continue;
            };
            let gateway = ObjectKey {
                namespace: key.namespace.clone(),
                name: gateway,
            };
            let orphan = LivePlugin {
                kind,
                key: key.clone(),
            };
            if !served.contains_key(&gateway) {
                if inputs.gateways.contains_key(&gateway) {
                    orphans.push(orphan);
                }
            } else if kind != config.written {
                match outcomes.get(&gateway) {
                    Some(Outcome::Unchanged) => orphans.push(orphan),
                    Some(Outcome::Apply(_)) => {
                        switching.insert(gateway);
                    }
                    Some(Outcome::Keep(_)) | None => {}
                }
            }
        }
    }
    (orphans, switching)
}

/// Entries of other controllers in each object's live `status.ancestors`,
/// by kind and key (only objects that have some).
fn foreign_ancestors(snapshot: &Snapshot) -> BTreeMap<(String, ObjectKey), usize> {
    snapshot
        .docs
        .iter()
        .filter(|d| d.foreign_ancestors > 0)
        .filter_map(|d| {
            let kind = d.doc.value["kind"].as_str()?.to_string();
            let key = crate::snapshot::key_of(&d.doc.value);
            Some(((kind, key), d.foreign_ancestors))
        })
        .collect()
}

/// The WasmPlugin's name for a Gateway (`render wasmplugin`'s).
pub fn plugin_key(gateway: &ObjectKey) -> ObjectKey {
    ObjectKey {
        namespace: gateway.namespace.clone(),
        name: format!("attache-{}", gateway.name),
    }
}

/// The plugin a Gateway should have, of the kind written: `render
/// wasmplugin`'s (or `render trafficextension`'s) object with an
/// ownerReference to the Gateway, so that it goes when the Gateway goes.
fn desired(
    config: &Config,
    inputs: &Inputs,
    key: &ObjectKey,
    uid: &str,
    sealed: &mut SealedPieces,
    entries: &mut EntryMemo,
) -> Result<Fresh, Kept> {
    let Resolved {
        resolution,
        diagnostics,
    } = attache_core::resolve_for_data_plane(inputs, key, DataPlane::Istio, entries).map_err(
        |e| Kept::Unresolvable {
            gateway: key.clone(),
            source: Arc::new(e),
        },
    )?;
    // How many entries the memo gave: all but those the change reached.
    tracing::Span::current().record("reused", entries.reused());
    let encoding = tracing::info_span!("encode").entered();
    let mut plugin =
        wasm_plugin_reusing(resolution, &config.plugin, sealed).map_err(|e| Kept::Encode {
            gateway: key.clone(),
            source: Arc::new(e),
        })?;
    plugin["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "name": key.name,
        "uid": uid,
    }]);
    if config.written == &TRAFFIC_EXTENSION {
        plugin = as_traffic_extension(&plugin);
    }
    let encoded = Encoded::of(&plugin).map_err(|e| Kept::Encode {
        gateway: key.clone(),
        source: Arc::new(e),
    })?;
    // The object written is checked, by the text the memo keeps (not
    // serialised a second time).
    if let Some(problem) = size_problem_at(&plugin, encoded.text.len()) {
        return Err(Kept::TooLarge(problem));
    }
    drop(encoding);
    let found = Found {
        lines: diagnostics
            .iter()
            .map(|d| format!("Gateway {key}: {d}"))
            .collect(),
        warnings: policy_warnings(&diagnostics),
    };
    Ok(Fresh {
        desired: (encoded, found),
        plugin,
    })
}

fn managed_by_us(live: &Value) -> bool {
    live["metadata"]["labels"][MANAGED_BY.0] == MANAGED_BY.1
}

/// `render trafficextension`'s object from `render wasmplugin`'s (the
/// module fields move under `spec.wasm`; `phase` is left out and
/// `priority` is the lowest, for the reasons
/// `attache_render::trafficextension` gives). Metadata (labels,
/// ownerReferences) is kept.
pub fn as_traffic_extension(plugin: &Value) -> Value {
    let mut extension = plugin.clone();
    extension["kind"] = json!(TRAFFIC_EXTENSION.kind);
    let mut spec = serde_json::Map::new();
    let mut wasm = serde_json::Map::new();
    if let Some(fields) = plugin["spec"].as_object() {
        for (field, value) in fields {
            match field.as_str() {
                "targetRefs" | "selector" => {
                    spec.insert(field.clone(), value.clone());
                }
                "phase" | "priority" => {}
                _ => {
                    wasm.insert(field.clone(), value.clone());
                }
            }
        }
    }
    spec.insert(
        "priority".into(),
        json!(attache_render::trafficextension::LAST_PRIORITY),
    );
    spec.insert("wasm".into(), Value::Object(wasm));
    extension["spec"] = Value::Object(spec);
    extension
}

/// The Gateway named by a plugin's ownerReference.
fn owner_gateway(live: &Value) -> Option<String> {
    live["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == "Gateway")
        .and_then(|o| o["name"].as_str())
        .map(str::to_string)
}

/// The kinds the snapshot lacks, as the log line names them.
pub fn missing_kinds(snapshot: &Snapshot) -> Vec<String> {
    WATCHED_KINDS
        .iter()
        .filter(|k| snapshot.missing.contains(k.kind))
        .map(|k| format!("{} ({})", k.kind, k.api_version()))
        .collect()
}
