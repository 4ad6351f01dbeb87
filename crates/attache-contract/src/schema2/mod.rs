//! The data-plane encoding (schema 2): what `attache render` and `attache
//! watch` hand the Envoy filter. Same meaning as the schema-1 [`Document`],
//! smaller and cheaper to load:
//! - each distinct set of settings (timeouts, retry, header changes) is one
//!   [`Profile`], and a route names its profile by index, so 10,000 routes
//!   sharing a handful of policies carry each policy once;
//! - header names and values in profiles are indices into one `strings`
//!   table, each distinct string written once;
//! - consecutive routes with the same profile and hostnames form one
//!   [`RouteGroup`] that names them once (document order is kept: it breaks
//!   ties in fallback matching);
//! - a route carries only what the filter reads: its name and the matches
//!   fallback matching needs. Provenance (`sources`) and the name's parts
//!   (listener, route, rule) stay in schema 1, which `attache resolve` keeps
//!   writing for people and tools.
//!
//! docs/contract.md describes the format; docs/schema/data-plane-2.json is
//! its JSON Schema.

use serde::{Deserialize, Serialize};

use crate::{
    Document, Header, HeaderChanges, HttpRouteMatch, Options, Retry, RouteEntry, Settings, Timeouts,
};

mod encode;

/// The schema version of the data-plane encoding.
pub const DATA_PLANE_SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataPlaneDocument {
    pub schema_version: u32,
    pub gateway: String,
    #[serde(default, skip_serializing_if = "Options::is_default")]
    pub options: Options,
    /// Interned header names and values; profiles refer to them by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strings: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
    /// The route entries, in document order, grouped.
    pub groups: Vec<RouteGroup>,
}

/// One distinct set of settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<Timeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<InternedChanges>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<InternedChanges>,
}

/// [`HeaderChanges`] with names and values as indices into `strings`:
/// `set` and `add` are `[name, value]` pairs, `remove` is names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InternedChanges {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<u32>,
}

/// Consecutive route entries that share settings and hostnames.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteGroup {
    /// Index into `profiles`; absent means no settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<u32>,
    /// Effective hostnames of every route of the group; empty means any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    pub routes: Vec<DataPlaneRoute>,
}

/// One route entry of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataPlaneRoute {
    /// `<listener>/<route namespace>/<route name>/<rule>`, as in schema 1.
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::exact_vec"
    )]
    pub matches: Vec<HttpRouteMatch>,
}

/// An index that points past its table, with the JSON path (relative to the
/// profile) of the field that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadIndex {
    pub field: String,
    pub index: u32,
    pub len: usize,
}

impl DataPlaneDocument {
    /// Back to schema 1, for tools and tests that edit what the data plane
    /// was given: `listener`, `routeNamespace`, `routeName` and `rule` come
    /// from the entry name's four parts; `sources` is gone for good.
    pub fn decode(&self) -> Result<Document, BadIndex> {
        let mut routes = Vec::new();
        for group in &self.groups {
            let settings = match group.profile {
                None => Settings::default(),
                Some(p) => self
                    .profiles
                    .get(p as usize)
                    .ok_or(BadIndex {
                        field: "profile".into(),
                        index: p,
                        len: self.profiles.len(),
                    })?
                    .settings(&self.strings)?,
            };
            for route in &group.routes {
                let parts = crate::EntryName::split(&route.name);
                routes.push(RouteEntry {
                    name: route.name.clone(),
                    listener: parts.listener.to_string(),
                    listener_set: parts.set.map(|s| format!("{}/{}", s.namespace, s.name)),
                    route_namespace: parts.namespace.to_string(),
                    route_name: parts.route.to_string(),
                    rule: parts.rule.to_string(),
                    hostnames: group.hostnames.clone(),
                    matches: route.matches.clone(),
                    settings: settings.clone(),
                    ..RouteEntry::default()
                });
            }
        }
        Ok(Document {
            schema_version: crate::SCHEMA_VERSION,
            gateway: self.gateway.clone(),
            options: self.options.clone(),
            routes,
        })
    }
}

impl Profile {
    /// Whether every string index of the profile is within a table of
    /// `len` strings (what [`Profile::settings`] would find).
    pub fn strings_within(&self, len: usize) -> bool {
        [&self.request_headers, &self.response_headers]
            .into_iter()
            .flatten()
            .all(|c| {
                let pairs = c.set.iter().chain(&c.add).flatten();
                pairs.chain(&c.remove).all(|&i| (i as usize) < len)
            })
    }

    /// The profile's settings, header strings resolved: the shape
    /// validation and compilation take, built once per profile. Every
    /// field is named on both sides (no `..`): a setting a profile does not
    /// carry does not compile.
    pub fn settings(&self, strings: &[String]) -> Result<Settings, BadIndex> {
        let Profile {
            timeouts,
            retry,
            request_headers,
            response_headers,
        } = self;
        Ok(Settings {
            timeouts: timeouts.clone(),
            retry: retry.clone(),
            request_headers: resolve(request_headers.as_ref(), strings, "requestHeaders")?,
            response_headers: resolve(response_headers.as_ref(), strings, "responseHeaders")?,
        })
    }
}

fn resolve(
    changes: Option<&InternedChanges>,
    strings: &[String],
    section: &str,
) -> Result<Option<HeaderChanges>, BadIndex> {
    let Some(changes) = changes else {
        return Ok(None);
    };
    let text = |index: u32, field: String| {
        strings.get(index as usize).cloned().ok_or(BadIndex {
            field,
            index,
            len: strings.len(),
        })
    };
    let headers = |kind: &str, pairs: &[[u32; 2]]| {
        pairs
            .iter()
            .enumerate()
            .map(|(j, [name, value])| {
                Ok(Header {
                    name: text(*name, format!("{section}.{kind}[{j}][0]"))?,
                    value: text(*value, format!("{section}.{kind}[{j}][1]"))?,
                })
            })
            .collect::<Result<Vec<_>, BadIndex>>()
    };
    Ok(Some(HeaderChanges {
        set: headers("set", &changes.set)?,
        add: headers("add", &changes.add)?,
        remove: changes
            .remove
            .iter()
            .enumerate()
            .map(|(j, n)| text(*n, format!("{section}.remove[{j}]")))
            .collect::<Result<_, _>>()?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, timeout: u64, header: &str) -> RouteEntry {
        // A route on listener `http` of no ListenerSet (the defaults).
        RouteEntry {
            name: name.into(),
            hostnames: vec!["shop.example.com".into()],
            listener: "http".into(),
            route_namespace: "shop".into(),
            route_name: "a".into(),
            rule: "0".into(),
            settings: Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(timeout),
                    ..Timeouts::default()
                }),
                request_headers: Some(HeaderChanges {
                    set: vec![Header {
                        name: header.into(),
                        value: "1".into(),
                    }],
                    remove: vec!["x-gone".into()],
                    ..HeaderChanges::default()
                }),
                ..Settings::default()
            },
            sources: [("timeouts.requestMs".to_string(), "p".to_string())].into(),
            ..RouteEntry::default()
        }
    }

    fn document(routes: Vec<RouteEntry>) -> Document {
        Document {
            schema_version: crate::SCHEMA_VERSION,
            gateway: "infra/edge".into(),
            options: Options::default(),
            routes,
        }
    }

    #[test]
    fn shared_settings_are_carried_once_and_strings_once() {
        let routes = (0..100)
            .map(|i| entry(&format!("http/shop/a/{i}"), 1000 + (i / 50), "x-a"))
            .chain([RouteEntry {
                name: "http/shop/bare/0".into(),
                ..RouteEntry::default()
            }])
            .chain([entry("http/shop/z/0", 1000, "x-a")])
            .collect::<Vec<_>>();
        let encoded = DataPlaneDocument::encode(&document(routes.clone()));
        assert_eq!(encoded.profiles.len(), 2);
        // Numbered by first use.
        let request_ms = |p: &Profile| p.timeouts.as_ref().and_then(|t| t.request_ms);
        assert_eq!(request_ms(&encoded.profiles[0]), Some(1000));
        assert_eq!(request_ms(&encoded.profiles[1]), Some(1001));
        // Moving the names and matches out encodes the same.
        assert_eq!(DataPlaneDocument::encode_owned(document(routes)), encoded);
        assert_eq!(encoded.strings, vec!["x-a", "1", "x-gone"]);
        // Runs of one profile and hostnames share a group; order is kept, so
        // the last route, back on profile 0, opens a group of its own.
        let shape: Vec<_> = encoded
            .groups
            .iter()
            .map(|g| (g.profile, g.hostnames.len(), g.routes.len()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (Some(0), 1, 50),
                (Some(1), 1, 50),
                (None, 0, 1),
                (Some(0), 1, 1)
            ]
        );
        assert_eq!(encoded.groups[0].routes[0].name, "http/shop/a/0");
        assert_eq!(encoded.groups[3].routes[0].name, "http/shop/z/0");
    }

    #[test]
    fn decoding_gives_back_the_document_without_sources() {
        let routes = vec![
            entry("http/shop/a/0", 500, "x-b"),
            RouteEntry {
                name: "http/shop/bare/0".into(),
                listener: "http".into(),
                listener_set: None,
                listener_set_kind: None,
                route_namespace: "shop".into(),
                route_name: "bare".into(),
                rule: "0".into(),
                ..RouteEntry::default()
            },
            entry("http/shop/a/1", 500, "x-b"),
        ];
        let original = document(routes);
        let mut expected = original.clone();
        for route in &mut expected.routes {
            route.sources.clear();
            // The fixture's parts do not all follow its names; decoding
            // takes them from the name.
            let parts: Vec<&str> = route.name.split('/').collect();
            route.route_name = parts[2].into();
            route.rule = parts[3].into();
        }
        assert_eq!(DataPlaneDocument::encode(&original).decode(), Ok(expected));
    }

    #[test]
    fn a_profile_resolves_to_the_entrys_settings() {
        let original = entry("http/shop/a/0", 500, "x-b");
        let encoded = DataPlaneDocument::encode(&document(vec![original.clone()]));
        let settings = encoded.profiles[0].settings(&encoded.strings);
        assert_eq!(
            settings,
            Ok(Settings {
                timeouts: original.settings.timeouts,
                request_headers: original.settings.request_headers,
                ..Settings::default()
            })
        );
    }

    #[test]
    fn an_index_past_the_table_names_its_field() {
        let profile = Profile {
            response_headers: Some(InternedChanges {
                add: vec![[0, 7]],
                ..InternedChanges::default()
            }),
            ..Profile::default()
        };
        assert_eq!(
            profile.settings(&["x".into()]),
            Err(BadIndex {
                field: "responseHeaders.add[0][1]".into(),
                index: 7,
                len: 1
            })
        );
    }
}
