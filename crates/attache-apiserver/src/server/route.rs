//! Request paths as the API server lays them out
//! (kubernetes.io/docs/reference/using-api/api-concepts/, "Resource URIs"):
//! `/api/v1/...` for the core group, `/apis/{group}/{version}/...` for the
//! others; `namespaces/{ns}/` before a namespaced resource; `/{name}` and
//! `/{subresource}` after.

use std::collections::BTreeMap;

/// What a path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`
    Version,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every other group.
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`: the APIResourceList.
    Resources {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
    NotFound,
}

/// A resource path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses a request path.
pub fn parse(path: &str) -> Route {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group((*group).into()),
        ["api", version] => Route::Resources {
            group: String::new(),
            version: (*version).into(),
        },
        ["apis", group, version] => Route::Resources {
            group: (*group).into(),
            version: (*version).into(),
        },
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::NotFound,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let base = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..ResourcePath::default()
    };
    let own = |s: &&str| Some((*s).to_string());
    let path = match rest {
        // A Namespace object itself, and its status.
        ["namespaces", name] if group.is_empty() => ResourcePath {
            plural: "namespaces".into(),
            name: own(name),
            ..base
        },
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => ResourcePath {
            plural: "namespaces".into(),
            name: own(name),
            subresource: own(sub),
            ..base
        },
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => ResourcePath {
            plural: (*plural).into(),
            namespace: own(ns),
            name: tail.first().and_then(own),
            subresource: tail.get(1).and_then(own),
            ..base
        },
        [plural, tail @ ..] if tail.len() <= 2 => ResourcePath {
            plural: (*plural).into(),
            name: tail.first().and_then(own),
            subresource: tail.get(1).and_then(own),
            ..base
        },
        _ => return Route::NotFound,
    };
    Route::Resource(path)
}

/// The query string as a map (the last value of a repeated key wins).
pub fn query(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding (and `+` as a space), as form-encoded queries use.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_resource() {
        let p = |s: &str| match parse(s) {
            Route::Resource(r) => r,
            other => panic!("{s}: {other:?}"),
        };
        let r = p("/apis/policy.attache.dev/v1alpha1/namespaces/shop/routepolicies/a/status");
        assert_eq!(
            (
                r.plural.as_str(),
                r.namespace.as_deref(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("routepolicies", Some("shop"), Some("a"), Some("status"))
        );
        let n = p("/api/v1/namespaces/shop");
        assert_eq!(
            (n.plural.as_str(), n.name.as_deref(), n.namespace),
            ("namespaces", Some("shop"), None)
        );
        let l = p("/api/v1/namespaces/shop/events");
        assert_eq!(
            (l.plural.as_str(), l.namespace.as_deref(), l.name),
            ("events", Some("shop"), None)
        );
        assert_eq!(parse("/apis"), Route::Groups);
        assert_eq!(parse("/openapi/v2"), Route::NotFound);
        let q = query(Some("labelSelector=app%3Dweb%2Ctier&watch=true"));
        assert_eq!(q["labelSelector"], "app=web,tier");
    }
}
