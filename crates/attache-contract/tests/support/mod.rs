//! The checks both JSON Schema tests make: a document validates, and each
//! listed one-value change of it is refused.

use serde_json::Value;

pub fn assert_valid(validator: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// Each case is (what it breaks, JSON pointer into `base`, the bad value).
pub fn assert_rejects(
    validator: &jsonschema::Validator,
    base: &Value,
    cases: &[(&str, &str, Value)],
) {
    for (what, pointer, bad) in cases {
        let mut doc = base.clone();
        match doc.pointer_mut(pointer) {
            Some(slot) => *slot = bad.clone(),
            None => panic!("{pointer} does not exist in the base document"),
        }
        assert!(
            !validator.is_valid(&doc),
            "schema accepted a document with {what}"
        );
    }
}
