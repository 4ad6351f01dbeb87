//! Label and field selectors of list and watch
//! (kubernetes.io/docs/concepts/overview/working-with-objects/labels/):
//! `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`; field
//! selectors on `metadata.name` and `metadata.namespace` only.

use serde_json::Value;

use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

/// Splits at top-level commas (not inside `(...)`).
fn split(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

fn set(text: &str) -> Result<Vec<String>, ApiError> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: {text}")))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn requirement(text: &str) -> Result<Requirement, ApiError> {
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().into()));
    }
    if let Some((key, value)) = text.split_once("!=") {
        return Ok(Requirement::NotEquals(
            key.trim().into(),
            value.trim().into(),
        ));
    }
    if let Some((key, value)) = text.split_once("==").or_else(|| text.split_once('=')) {
        return Ok(Requirement::Equals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, values)) = text.split_once(" notin ") {
        return Ok(Requirement::NotIn(key.trim().into(), set(values)?));
    }
    if let Some((key, values)) = text.split_once(" in ") {
        return Ok(Requirement::In(key.trim().into(), set(values)?));
    }
    Ok(Requirement::Exists(text.trim().into()))
}

fn holds(req: &Requirement, get: impl Fn(&str) -> Option<String>) -> bool {
    match req {
        Requirement::Equals(k, v) => get(k).as_deref() == Some(v.as_str()),
        Requirement::NotEquals(k, v) => get(k).as_deref() != Some(v.as_str()),
        Requirement::Exists(k) => get(k).is_some(),
        Requirement::NotExists(k) => get(k).is_none(),
        Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
        Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
    }
}

impl Selector {
    /// Parses the `labelSelector` and `fieldSelector` query parameters.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, ApiError> {
        let labels = split(labels.unwrap_or_default())
            .into_iter()
            .map(requirement)
            .collect::<Result<Vec<_>, _>>()?;
        let fields = split(fields.unwrap_or_default())
            .into_iter()
            .map(requirement)
            .collect::<Result<Vec<_>, _>>()?;
        for f in &fields {
            let key = match f {
                Requirement::Equals(k, _) | Requirement::NotEquals(k, _) => k,
                _ => "",
            };
            if key != "metadata.name" && key != "metadata.namespace" {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {key} (the stand-in selects on metadata.name and metadata.namespace, with = and !=)"
                )));
            }
        }
        Ok(Selector { labels, fields })
    }

    pub fn matches(&self, object: &Value) -> bool {
        let meta = &object["metadata"];
        let label = |k: &str| meta["labels"][k].as_str().map(str::to_string);
        let field = |k: &str| {
            let v = meta[k.trim_start_matches("metadata.")].as_str();
            Some(v.unwrap_or_default().to_string())
        };
        self.labels.iter().all(|r| holds(r, label)) && self.fields.iter().all(|r| holds(r, field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_operator_selects() {
        let o = json!({"metadata": {"name": "a", "labels": {"app": "web", "tier": "front"}}});
        let yes = [
            "app=web",
            "app==web,tier",
            "!missing",
            "tier in (front, back)",
            "app notin (db)",
            "app!=db",
        ];
        let no = [
            "app=db",
            "missing",
            "!app",
            "tier in (back)",
            "app notin (web)",
        ];
        for s in yes {
            assert!(Selector::parse(Some(s), None).unwrap().matches(&o), "{s}");
        }
        for s in no {
            assert!(!Selector::parse(Some(s), None).unwrap().matches(&o), "{s}");
        }
        assert!(Selector::parse(None, Some("metadata.name=a"))
            .unwrap()
            .matches(&o));
        assert!(!Selector::parse(None, Some("metadata.name!=a"))
            .unwrap()
            .matches(&o));
        assert!(Selector::parse(None, Some("spec.x=1")).is_err());
    }
}
