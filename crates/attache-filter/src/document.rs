//! Reading the plugin configuration bytes into the contract's `Document`.
//!
//! The bytes are the schema-1 JSON, either verbatim (a StringValue/BytesValue
//! configuration, or a JSON string holding it) or as Istio produces it from a
//! `WasmPlugin.pluginConfig` struct. Protobuf `Struct` numbers are doubles, so
//! `10000` may arrive as `10000.0` or `1e4`; integral doubles are turned back
//! into integers before typed deserialisation.

use attache_contract::Document;
use serde_json::{Number, Value};

use crate::error::ConfigError;

/// Parses and shapes the configuration; value checks happen in `compile`.
pub fn parse(bytes: &[u8]) -> Result<Document, ConfigError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ConfigError::Empty);
    }
    let mut value: Value = serde_json::from_slice(bytes).map_err(not_json)?;
    // A document handed over as a JSON string (double-encoded) is unwrapped once.
    if let Value::String(inner) = &value {
        value = serde_json::from_str(inner).map_err(not_json)?;
    }
    integral_floats_to_integers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = json_path(&err.path().to_string());
        ConfigError::Shape {
            path,
            reason: err.into_inner().to_string(),
        }
    })
}

fn not_json(err: serde_json::Error) -> ConfigError {
    ConfigError::NotJson {
        line: err.line(),
        column: err.column(),
        reason: err.to_string(),
    }
}

/// serde_path_to_error prints the root as `.`; the filter's messages use
/// `$`-rooted paths like `$.routes[0].retry.codes[1]`.
fn json_path(raw: &str) -> String {
    if raw == "." || raw.is_empty() {
        "$".to_string()
    } else if raw.starts_with('[') {
        format!("${raw}")
    } else {
        format!("$.{raw}")
    }
}

/// Largest integer a double represents exactly; beyond it "integral" is
/// meaningless, so such numbers are left for serde to reject.
const MAX_EXACT_DOUBLE: f64 = 9_007_199_254_740_992.0;

fn integral_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() <= MAX_EXACT_DOUBLE {
                    // Exact by the bound above: the casts cannot truncate.
                    *n = if f >= 0.0 {
                        Number::from(f as u64)
                    } else {
                        Number::from(f as i64)
                    };
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_doubles_become_integers_and_fractions_stay() {
        let mut v: Value =
            serde_json::from_str(r#"{"a":1.0,"b":[1e4,-2.0],"c":1.5,"d":"1.0"}"#).unwrap();
        integral_floats_to_integers(&mut v);
        assert_eq!(v["a"].as_u64(), Some(1));
        assert_eq!(v["b"][0].as_u64(), Some(10000));
        assert_eq!(v["b"][1].as_i64(), Some(-2));
        assert!(v["c"].is_f64());
        assert_eq!(v["d"], Value::String("1.0".into()));
    }

    #[test]
    fn whitespace_only_is_empty() {
        assert_eq!(parse(b"  \n"), Err(ConfigError::Empty));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        match parse(b"{\n  \"schemaVersion\": 1,,\n}") {
            Err(ConfigError::NotJson { line, .. }) => assert_eq!(line, 2),
            other => panic!("unexpected {other:?}"),
        }
    }
}
