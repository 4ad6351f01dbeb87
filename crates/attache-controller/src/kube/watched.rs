//! The form the reflector keeps each watched object in ([`Watched`]): an
//! input object read as it arrives, with its metadata beside it; our
//! plugins whole.

use std::borrow::Cow;
use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject};
use kube::Resource;
use serde_json::Value;

use crate::kinds::{Role, WatchedKind};
use crate::snapshot::{ApiObject, Read};

/// An object as the reflector keeps it. Of an input kind: its metadata
/// (what the reflector and the status-only check need) and what reading it
/// gave when it arrived (`crate::snapshot::ReadObject`: its parsed pieces
/// and the slim document later passes read), and no other copy: holding
/// each of 10,000 routes and policies whole besides cost ~260 MiB
/// (bench/findings.md, "Memory: what a round keeps"). Our plugins (the
/// output kinds) are kept whole: the reconcile compares them.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The object; of an input kind, its metadata only (`data` is null).
    pub object: DynamicObject,
    /// Of an input kind, what reading it gave.
    pub read: Option<Read>,
}

impl Watched {
    /// An object as it arrives from the watch. `stored` is the one the
    /// store holds under the same name: at the same resourceVersion (a
    /// relist after a 410) what it read is taken as it is.
    pub fn arrived(
        kind: &WatchedKind,
        mut object: DynamicObject,
        stored: Option<Arc<Watched>>,
    ) -> Watched {
        if kind.role == Role::Output {
            return Watched { object, read: None };
        }
        let version = object.metadata.resource_version.as_deref();
        let same = stored.filter(|s| {
            version.is_some() && s.object.metadata.resource_version.as_deref() == version
        });
        let read = match same.and_then(|s| s.read.clone()) {
            Some(read) => read,
            None => crate::snapshot::read_one(kind, &object),
        };
        object.data = Value::Null;
        Watched {
            object,
            read: Some(read),
        }
    }
}

impl Resource for Watched {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::kind(dt)
    }
    fn group(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::group(dt)
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::version(dt)
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::api_version(dt)
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::plural(dt)
    }
    fn meta(&self) -> &kube::api::ObjectMeta {
        &self.object.metadata
    }
    fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.object.metadata
    }
}

/// The snapshot takes what was read when the object arrived.
impl ApiObject for Watched {
    fn uid(&self) -> Option<&str> {
        self.object.uid()
    }
    fn resource_version(&self) -> Option<&str> {
        ApiObject::resource_version(&self.object)
    }
    fn namespace_and_name(&self) -> (&str, &str) {
        self.object.namespace_and_name()
    }
    fn to_json(&self) -> Result<Value, serde_json::Error> {
        self.object.to_json()
    }
    fn already_read(&self) -> Option<Read> {
        self.read.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube::api::DynamicObject;
    use serde_json::{json, Value};

    use super::Watched;
    use crate::kinds::named;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("a Kubernetes object")
    }

    fn route(rv: &str) -> DynamicObject {
        object(
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "r", "namespace": "shop", "uid": "u", "resourceVersion": rv},
            "spec": {"parentRefs": [{"name": "edge"}], "rules": [{}]}}),
        )
    }

    /// The read object of a [`Watched`], which an input kind always has.
    fn read(watched: &Watched) -> Arc<crate::snapshot::ReadObject> {
        let read = watched.read.clone().expect("read as it arrived");
        read.expect("readable").expect("an object").0
    }

    #[test]
    fn an_input_object_is_kept_read_and_its_spec_only_in_its_pieces() {
        let kind = named("HTTPRoute").unwrap();
        let first = Arc::new(Watched::arrived(kind, route("1"), None));
        assert_eq!(first.object.data, Value::Null);
        assert_eq!(first.object.metadata.uid.as_deref(), Some("u"));
        let pieces = attache_core::assemble([&read(&first).pieces]);
        assert_eq!(pieces.routes.len(), 1);
        // The same resourceVersion again (a relist): not read again.
        let relisted = Watched::arrived(kind, route("1"), Some(first.clone()));
        assert!(Arc::ptr_eq(&read(&relisted), &read(&first)));
        // A new one is read.
        let edited = Watched::arrived(kind, route("2"), Some(first.clone()));
        assert!(!Arc::ptr_eq(&read(&edited), &read(&first)));
    }

    #[test]
    fn our_plugin_is_kept_whole() {
        let kind = named("WasmPlugin").unwrap();
        let plugin = object(
            json!({"apiVersion": "extensions.istio.io/v1alpha1", "kind": "WasmPlugin",
            "metadata": {"name": "attache-edge", "namespace": "shop"}, "spec": {"url": "oci://x"}}),
        );
        let watched = Watched::arrived(kind, plugin, None);
        assert!(watched.read.is_none());
        assert_eq!(watched.object.data["spec"]["url"], "oci://x");
    }
}
