//! The kinds the stand-in serves: built-in ones (namespaces, events,
//! leases, CRDs themselves), any kind given by a CustomResourceDefinition
//! (with its structural schema), and kinds given by hand (by default
//! `x-kubernetes-preserve-unknown-fields`). A kind that is not registered
//! answers 404, as a kind whose CRD is not installed does.

use std::sync::Arc;

use serde_json::Value;

use crate::error::LoadError;

/// One served version of a kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    /// The version's `openAPIV3Schema`; `None` keeps every field (as
    /// `x-kubernetes-preserve-unknown-fields: true` at the root).
    pub schema: Option<Value>,
}

/// A served kind (one row of discovery's `APIResourceList`).
#[derive(Debug, Clone, PartialEq)]
pub struct KindSpec {
    /// `""` for the core group.
    pub group: String,
    /// Served versions, the first the preferred one. Objects are stored
    /// once and served in every version unchanged (a CRD's `conversion:
    /// None`).
    pub versions: Vec<Version>,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    /// Whether `.../status` is a subresource (then a main-resource write
    /// never changes `status`, and a status write changes nothing else).
    pub status_subresource: bool,
    pub short_names: Vec<String>,
}

impl KindSpec {
    /// A kind of one version, without a schema (every field kept) and
    /// without the status subresource.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        KindSpec {
            group: group.into(),
            versions: vec![Version {
                name: version.into(),
                schema: None,
            }],
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            namespaced,
            status_subresource: false,
            short_names: Vec::new(),
        }
    }

    /// With the `status` subresource.
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// The kind a `CustomResourceDefinition` (apiextensions.k8s.io/v1)
    /// defines: its served versions with their schemas, its scope and
    /// whether it has the status subresource (taken from the first served
    /// version).
    pub fn from_crd(crd: &Value) -> Result<Self, LoadError> {
        let name = crd["metadata"]["name"].as_str().unwrap_or("<unnamed CRD>");
        let invalid = |message: &str| LoadError::Invalid {
            what: format!("CustomResourceDefinition {name}"),
            message: message.into(),
        };
        let spec = &crd["spec"];
        let text = |v: &Value, field: &str| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| invalid(&format!("{field} is missing")))
        };
        let group = text(&spec["group"], "spec.group")?;
        let kind = text(&spec["names"]["kind"], "spec.names.kind")?;
        let plural = text(&spec["names"]["plural"], "spec.names.plural")?;
        let singular = spec["names"]["singular"]
            .as_str()
            .map_or_else(|| kind.to_ascii_lowercase(), str::to_string);
        let served: Vec<&Value> = spec["versions"]
            .as_array()
            .map(|vs| vs.iter().filter(|v| v["served"] != false).collect())
            .unwrap_or_default();
        let first = served.first().ok_or_else(|| invalid("no served version"))?;
        let versions = served
            .iter()
            .map(|v| {
                Ok(Version {
                    name: text(&v["name"], "spec.versions[].name")?,
                    schema: v["schema"].get("openAPIV3Schema").cloned(),
                })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        Ok(KindSpec {
            group,
            versions,
            kind,
            plural,
            singular,
            namespaced: spec["scope"] != "Cluster",
            status_subresource: first["subresources"].get("status").is_some(),
            short_names: spec["names"]["shortNames"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// The preferred (first) version's name.
    pub fn preferred(&self) -> &str {
        self.versions.first().map_or("v1", |v| v.name.as_str())
    }

    /// The schema of one version, if it has one.
    pub fn schema(&self, version: &str) -> Option<&Value> {
        self.versions
            .iter()
            .find(|v| v.name == version)
            .and_then(|v| v.schema.as_ref())
    }

    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v.name == version)
    }

    /// The key objects of this kind are stored under (`group/plural`).
    pub fn resource(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }

    /// Human name for messages, `routepolicies.policy.attache.dev`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The built-in kinds every stand-in serves: namespaces, core and
/// events.k8s.io Events, Services, ConfigMaps, Secrets, Leases and
/// CustomResourceDefinitions (a CRD written through the API registers or
/// unregisters its kind).
pub fn builtin() -> Vec<KindSpec> {
    let short = |spec: KindSpec, names: &[&str]| KindSpec {
        short_names: names.iter().map(|n| n.to_string()).collect(),
        ..spec
    };
    vec![
        short(
            KindSpec::new("", "v1", "Namespace", "namespaces", false).with_status(),
            &["ns"],
        ),
        short(KindSpec::new("", "v1", "Event", "events", true), &["ev"]),
        short(
            KindSpec::new("", "v1", "Service", "services", true).with_status(),
            &["svc"],
        ),
        short(
            KindSpec::new("", "v1", "ConfigMap", "configmaps", true),
            &["cm"],
        ),
        KindSpec::new("", "v1", "Secret", "secrets", true),
        short(
            KindSpec::new("", "v1", "ServiceAccount", "serviceaccounts", true),
            &["sa"],
        ),
        KindSpec::new("coordination.k8s.io", "v1", "Lease", "leases", true),
        short(
            KindSpec::new("events.k8s.io", "v1", "Event", "events", true),
            &["ev"],
        ),
        short(
            KindSpec::new(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                false,
            )
            .with_status(),
            &["crd", "crds"],
        ),
    ]
}

/// Whether a kind is built in (served by the API server itself, not by a
/// CRD): those take a strategic merge patch.
pub fn is_builtin(kind: &KindSpec) -> bool {
    matches!(
        kind.group.as_str(),
        "" | "coordination.k8s.io" | "events.k8s.io" | "apiextensions.k8s.io"
    )
}

/// The Gateway API kinds, the Istio WasmPlugin and the peers' policy kinds
/// the controller reads, each with the status subresource and without a
/// schema (their CRDs are not in this repository).
pub fn gateway_api() -> Vec<KindSpec> {
    const GW: &str = "gateway.networking.k8s.io";
    let rows = [
        (GW, "v1", "GatewayClass", "gatewayclasses", false),
        (GW, "v1", "Gateway", "gateways", true),
        (GW, "v1", "HTTPRoute", "httproutes", true),
        (GW, "v1", "GRPCRoute", "grpcroutes", true),
        (GW, "v1", "ListenerSet", "listenersets", true),
        (GW, "v1beta1", "ReferenceGrant", "referencegrants", true),
        (
            "gateway.networking.x-k8s.io",
            "v1alpha1",
            "XListenerSet",
            "xlistenersets",
            true,
        ),
        (
            "extensions.istio.io",
            "v1alpha1",
            "WasmPlugin",
            "wasmplugins",
            true,
        ),
        (
            "gateway.kgateway.dev",
            "v1alpha1",
            "TrafficPolicy",
            "trafficpolicies",
            true,
        ),
        (
            "gateway.envoyproxy.io",
            "v1alpha1",
            "BackendTrafficPolicy",
            "backendtrafficpolicies",
            true,
        ),
    ];
    rows.iter()
        .map(|(g, v, k, p, n)| KindSpec::new(g, v, k, p, *n).with_status())
        .collect()
}

/// The registry of served kinds.
#[derive(Debug, Clone, Default)]
pub struct Kinds {
    specs: Vec<Arc<KindSpec>>,
}

impl Kinds {
    /// Adds a kind, replacing one of the same group and plural.
    pub fn upsert(&mut self, spec: KindSpec) {
        self.remove(&spec.group, &spec.plural);
        self.specs.push(Arc::new(spec));
    }

    pub fn remove(&mut self, group: &str, plural: &str) -> Option<Arc<KindSpec>> {
        let at = self
            .specs
            .iter()
            .position(|s| s.group == group && s.plural == plural)?;
        Some(self.specs.remove(at))
    }

    pub fn all(&self) -> &[Arc<KindSpec>] {
        &self.specs
    }

    /// The kind served at `group/version/plural`.
    pub fn by_path(&self, group: &str, version: &str, plural: &str) -> Option<Arc<KindSpec>> {
        self.specs
            .iter()
            .find(|s| s.group == group && s.plural == plural && s.serves(version))
            .cloned()
    }

    /// The kind of an object's `apiVersion` and `kind`.
    pub fn by_type(&self, api_version: &str, kind: &str) -> Option<(Arc<KindSpec>, String)> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.specs
            .iter()
            .find(|s| s.group == group && s.kind == kind && s.serves(version))
            .map(|s| (s.clone(), version.to_string()))
    }
}
