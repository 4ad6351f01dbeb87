//! A JSON value read from YAML that refuses duplicate mapping keys.
//!
//! `serde_json::Value`'s own deserializer keeps the last of two equal keys
//! without a word, so `timeouts: {request: 1s, request: 60s}` would silently
//! mean 60s. Reviewers read the first; the cluster's API server rejects such
//! a manifest; so must we (docs/semantics.md, "What a policy may not do").

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Deserializes like `serde_json::Value`, but a mapping that names the same
/// key twice is an error naming the key.
pub struct StrictValue(pub Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // NaN and infinities have no JSON form; they are not valid in any
        // field the resolver reads, so null makes the field's check fail.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(d).map(|v| v.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<MapKey>()? {
            let StrictValue(value) = map.next_value()?;
            if out.contains_key(&key.0) {
                return Err(de::Error::custom(format!(
                    "duplicate key {:?} in one mapping (the API server rejects it; which one is meant?)",
                    key.0
                )));
            }
            out.insert(key.0, value);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key as JSON spells it: YAML allows `80: x` or `true: x`, which
/// JSON (and Kubernetes) read as the strings "80" and "true".
struct MapKey(String);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match StrictValue::deserialize(deserializer)?.0 {
            Value::String(s) => Ok(MapKey(s)),
            Value::Null => Ok(MapKey("null".into())),
            Value::Bool(b) => Ok(MapKey(b.to_string())),
            Value::Number(n) => Ok(MapKey(n.to_string())),
            Value::Array(_) | Value::Object(_) => Err(de::Error::custom(
                "a mapping key must be a string, not a list or a mapping",
            )),
        }
    }
}
