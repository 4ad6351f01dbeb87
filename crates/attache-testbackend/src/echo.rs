//! The JSON body every answer carries: what the backend received, so a test
//! can assert which headers the filter set, added or removed on the way.

use serde_json::{json, Map, Value};

/// Builds the echo body. `headers` are `(name, value)` pairs in arrival
/// order; names are lower-cased, and a name seen more than once becomes an
/// array of its values in arrival order.
pub fn echo_body<'a, I>(
    method: &str,
    url: &str,
    headers: I,
    attempt: u64,
    key: Option<&str>,
) -> Value
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    json!({
        "method": method,
        "path": path,
        "query": query,
        "headers": header_map(headers),
        "attempt": attempt,
        "key": key,
    })
}

fn header_map<'a, I>(headers: I) -> Map<String, Value>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut map = Map::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        let value = Value::String(value.to_owned());
        match map.get_mut(&name) {
            None => {
                map.insert(name, value);
            }
            Some(Value::Array(values)) => values.push(value),
            Some(first) => {
                let first = first.take();
                map.insert(name, Value::Array(vec![first, value]));
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_method_path_query_attempt_and_key() {
        let body = echo_body("GET", "/a/b?x=1&y=2", [], 3, Some("k"));
        assert_eq!(body["method"], "GET");
        assert_eq!(body["path"], "/a/b");
        assert_eq!(body["query"], "x=1&y=2");
        assert_eq!(body["attempt"], 3);
        assert_eq!(body["key"], "k");
    }

    #[test]
    fn missing_query_and_key_are_empty_and_null() {
        let body = echo_body("POST", "/", [], 1, None);
        assert_eq!(body["query"], "");
        assert_eq!(body["key"], Value::Null);
    }

    #[test]
    fn headers_are_lower_cased_and_repeats_become_arrays() {
        let body = echo_body(
            "GET",
            "/",
            [("X-A", "1"), ("x-b", "2"), ("x-a", "3"), ("X-A", "4")],
            1,
            None,
        );
        assert_eq!(body["headers"]["x-a"], json!(["1", "3", "4"]));
        assert_eq!(body["headers"]["x-b"], "2");
    }
}
