//! The settings as a flat map of leaf fields. The fold works field by field
//! and provenance is kept per field, so the shape here is what makes
//! "which policy set this?" answerable.

use std::collections::BTreeMap;
use std::fmt;

pub(crate) mod document;

/// Request or response header changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Request,
    Response,
}

/// The four top-level fields; the unit of a shallow merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Timeouts,
    Retry,
    Headers(Direction),
}

impl Group {
    /// The four groups, in `FieldKey` order.
    pub const ALL: [Group; 4] = [
        Group::Timeouts,
        Group::Retry,
        Group::Headers(Direction::Request),
        Group::Headers(Direction::Response),
    ];

    /// The group's name in a policy's settings (`RawSettings`'s fields).
    pub fn policy_name(self) -> &'static str {
        match self {
            Group::Timeouts => "timeouts",
            Group::Retry => "retry",
            Group::Headers(Direction::Request) => "requestHeaderModifier",
            Group::Headers(Direction::Response) => "responseHeaderModifier",
        }
    }
}

/// One of a header modifier's three lists. RFC 7386 (the Patch merge
/// strategies) replaces a list whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HeaderList {
    Set,
    Add,
    Remove,
}

/// A field an opted-in policy removes with `null` (PatchOverrides): a
/// whole group, one scalar leaf, or one header list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Removal {
    Group(Group),
    Leaf(FieldKey),
    List(Direction, HeaderList),
}

impl Removal {
    /// Whether removing `self` removes `key`.
    pub fn covers(&self, key: &FieldKey) -> bool {
        match self {
            Removal::Group(g) => key.group() == *g,
            Removal::Leaf(k) => k == key,
            Removal::List(d, list) => key.header_list() == Some((*d, *list)),
        }
    }
}

impl fmt::Display for Removal {
    /// As the policy writes it: `timeouts`, `retry.codes`,
    /// `requestHeaderModifier.set`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Removal::Group(g) => f.write_str(g.policy_name()),
            Removal::Leaf(k) => write!(
                f,
                "{}.{}",
                k.group().policy_name(),
                document::policy_name(k)
            ),
            Removal::List(d, list) => {
                let name = match list {
                    HeaderList::Set => "set",
                    HeaderList::Add => "add",
                    HeaderList::Remove => "remove",
                };
                write!(f, "{}.{name}", Group::Headers(*d).policy_name())
            }
        }
    }
}

/// One leaf of the settings. Header `set`/`add` entries are keyed by their
/// lower-cased name (GEP-2649 list-maps); `remove` is one list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldKey {
    RequestTimeout,
    BackendRequestTimeout,
    RetryAttempts,
    RetryCodes,
    RetryBackoff,
    RetryOn,
    HeaderSet(Direction, String),
    HeaderAdd(Direction, String),
    HeaderRemove(Direction),
}

impl FieldKey {
    pub fn group(&self) -> Group {
        match self {
            FieldKey::RequestTimeout | FieldKey::BackendRequestTimeout => Group::Timeouts,
            FieldKey::RetryAttempts
            | FieldKey::RetryCodes
            | FieldKey::RetryBackoff
            | FieldKey::RetryOn => Group::Retry,
            FieldKey::HeaderSet(d, _) | FieldKey::HeaderAdd(d, _) | FieldKey::HeaderRemove(d) => {
                Group::Headers(*d)
            }
        }
    }

    /// The header list a key belongs to; `None` for the scalars.
    pub fn header_list(&self) -> Option<(Direction, HeaderList)> {
        match self {
            FieldKey::HeaderSet(d, _) => Some((*d, HeaderList::Set)),
            FieldKey::HeaderAdd(d, _) => Some((*d, HeaderList::Add)),
            FieldKey::HeaderRemove(d) => Some((*d, HeaderList::Remove)),
            FieldKey::RequestTimeout
            | FieldKey::BackendRequestTimeout
            | FieldKey::RetryAttempts
            | FieldKey::RetryCodes
            | FieldKey::RetryBackoff
            | FieldKey::RetryOn => None,
        }
    }

    /// Every scalar key, in the order of `document.rs`'s table (header keys
    /// are one per header name). A new row is in it, so a test that walks
    /// it fails until the setting is handled (the enforcement matrix,
    /// attache-render `tests/enforcement_matrix.rs`).
    pub fn scalars() -> &'static [FieldKey] {
        document::SCALARS
    }

    /// Header entries whose values a deep merge joins.
    pub fn is_header_entry(&self) -> bool {
        matches!(self, FieldKey::HeaderSet(..) | FieldKey::HeaderAdd(..))
    }
}

impl fmt::Display for FieldKey {
    /// The path in the schema-1 document (`timeouts.requestMs`,
    /// `requestHeaders.set.x-a`): the keys of `RouteEntry.sources`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = |d: &Direction| match d {
            Direction::Request => "requestHeaders",
            Direction::Response => "responseHeaders",
        };
        if let Some(path) = document::scalar_path(self) {
            return f.write_str(path);
        }
        match self {
            FieldKey::HeaderSet(d, name) => write!(f, "{}.set.{name}", dir(d)),
            FieldKey::HeaderAdd(d, name) => write!(f, "{}.add.{name}", dir(d)),
            FieldKey::HeaderRemove(d) => write!(f, "{}.remove", dir(d)),
            // Scalars: their path is the table's (`document::scalar_path`).
            _ => Ok(()),
        }
    }
}

/// A validated leaf value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldValue {
    Millis(u64),
    Count(u32),
    Codes(Vec<u16>),
    /// Retry triggers or removed header names.
    Words(Vec<String>),
    /// A header value.
    Text(String),
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Millis(ms) => write!(f, "{ms}ms"),
            FieldValue::Count(n) => write!(f, "{n}"),
            FieldValue::Codes(codes) => {
                let texts: Vec<String> = codes.iter().map(u16::to_string).collect();
                write!(f, "[{}]", texts.join(", "))
            }
            FieldValue::Words(words) => write!(f, "[{}]", words.join(", ")),
            FieldValue::Text(text) => write!(f, "{text:?}"),
        }
    }
}

/// Settings as leaves. An empty map sets nothing.
pub type FieldMap = BTreeMap<FieldKey, FieldValue>;
