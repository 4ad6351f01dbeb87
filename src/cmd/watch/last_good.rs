//! The last good version of each object, kept while an edit of it has
//! errors: what an API server's validation gives a Kubernetes user (a
//! refused `kubectl apply` leaves the object as it was), for files.
//!
//! Without it, one tenant's bad edit either stopped every other tenant's
//! updates (the whole generation refused) or took that tenant's route away
//! (the object dropped). With it, the bad object keeps serving as it was,
//! every other change is written, and standard error says which object was
//! kept and why (docs/envoy.md, "attache watch").

use std::collections::{BTreeMap, BTreeSet};

use attache_core::source::{Origin, SourceDoc};
use attache_core::{Inputs, Severity};
use serde_json::Value;

#[derive(Default)]
pub struct LastGood {
    by_object: BTreeMap<String, Value>,
}

/// The documents to resolve, and what was done to which object.
pub struct Patched {
    pub docs: Vec<SourceDoc>,
    pub messages: Vec<String>,
}

impl LastGood {
    /// `docs` with every object that has an error replaced by its last
    /// good version, or left out when it never had one (a new object: it
    /// served nothing yet). `None` when an error belongs to no object (a
    /// file that is not YAML): then nothing can be said about what it held,
    /// and the whole generation waits.
    pub fn patch(&self, docs: Vec<SourceDoc>, inputs: &Inputs) -> Option<Patched> {
        let mut bad: BTreeSet<&Origin> = BTreeSet::new();
        for d in inputs
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
        {
            match (&d.origin, &d.object) {
                (Some(origin), Some(_)) => {
                    bad.insert(origin);
                }
                _ => return None,
            }
        }
        let mut messages = Vec::new();
        let mut out = Vec::with_capacity(docs.len());
        for doc in docs {
            if !bad.contains(&doc.origin) {
                out.push(doc);
                continue;
            }
            let (id, label) = identity(&doc.value)?;
            match self.by_object.get(&id) {
                Some(good) => {
                    messages.push(format!(
                        "keeping the last good {label}: its edit at {} has the error(s) above; the other changes are written",
                        doc.origin
                    ));
                    out.push(SourceDoc { origin: doc.origin, value: good.clone() });
                }
                None => messages.push(format!(
                    "{label} is left out: it has the error(s) above and no earlier good version; the other changes are written"
                )),
            }
        }
        Some(Patched {
            docs: out,
            messages,
        })
    }

    /// Remembers every object of a generation that was written.
    pub fn record(&mut self, docs: &[SourceDoc]) {
        for doc in docs {
            if let Some((id, _)) = identity(&doc.value) {
                self.by_object.insert(id, doc.value.clone());
            }
        }
    }
}

/// The object a document is: a key (kind, group, namespace, name) and
/// how messages name it (`HTTPRoute shop/store`).
fn identity(value: &Value) -> Option<(String, String)> {
    let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
    let kind = text("/kind")?;
    let group = text("/apiVersion")?.rsplit_once('/').map_or("", |(g, _)| g);
    let name = text("/metadata/name")?;
    let label = match text("/metadata/namespace") {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    Some((format!("{label} {group}"), label))
}
