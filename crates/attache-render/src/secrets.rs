//! `kubernetes.io/tls` Secrets: the certificate chain and private key an
//! HTTPS listener terminates with (its `tls.certificateRefs`).
//!
//! The key is secret material: it is never part of an error message or a
//! `Debug` print, and the CLI writes it only into the SDS file Envoy reads,
//! readable by its owner alone (docs/envoy.md, "HTTPS listeners").

use std::fmt;

use attache_core::source::{Origin, SourceDoc};
use attache_core::topology::ObjectKey;
use base64::Engine;
use serde_json::Value;

use crate::error::ManifestError;

/// A Secret of type `kubernetes.io/tls`, checked to hold PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsSecret {
    pub origin: Origin,
    pub key: ObjectKey,
    /// `tls.crt`: the certificate chain, PEM.
    pub certificate_chain: String,
    /// `tls.key`: the private key, PEM.
    pub private_key: String,
}

impl fmt::Debug for TlsSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSecret")
            .field("origin", &self.origin)
            .field("key", &self.key)
            .field("certificate_chain", &self.certificate_chain)
            .field("private_key", &"<redacted>")
            .finish()
    }
}

const KIND: &str = "Secret";

/// A core `Secret` document; `None` when it is of another type (an opaque
/// Secret is no certificate and not this module's business).
pub fn parse(doc: &SourceDoc, key: &ObjectKey) -> Option<Result<TlsSecret, Box<ManifestError>>> {
    let kind_of = doc.value.get("type").and_then(Value::as_str);
    if kind_of != Some("kubernetes.io/tls") {
        return None;
    }
    Some(read(doc, key))
}

fn read(doc: &SourceDoc, key: &ObjectKey) -> Result<TlsSecret, Box<ManifestError>> {
    let certificate_chain = field(doc, key, "tls.crt", "CERTIFICATE")?;
    let private_key = field(doc, key, "tls.key", "PRIVATE KEY")?;
    Ok(TlsSecret {
        origin: doc.origin.clone(),
        key: key.clone(),
        certificate_chain,
        private_key,
    })
}

/// `stringData.<name>` as written, else `data.<name>` base64-decoded; it
/// must be UTF-8 PEM with a `-----BEGIN ...<label>-----` block.
fn field(
    doc: &SourceDoc,
    key: &ObjectKey,
    name: &str,
    label: &str,
) -> Result<String, Box<ManifestError>> {
    let problem = |path: String, problem: String| {
        Box::new(ManifestError {
            origin: doc.origin.clone(),
            kind: KIND,
            key: key.to_string(),
            path,
            problem,
        })
    };
    let plain = doc.value.pointer(&format!(
        "/stringData/{}",
        name.replace('~', "~0").replace('/', "~1")
    ));
    let encoded = doc.value.get("data").and_then(|d| d.get(name));
    let (path, text) = match (plain, encoded) {
        (Some(Value::String(text)), _) => (format!("stringData.{name}"), text.clone()),
        (_, Some(Value::String(b64))) => {
            let path = format!("data.{name}");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|_| {
                    problem(
                        path.clone(),
                        "is not base64; a Secret's data values are base64-encoded".into(),
                    )
                })?;
            let text = String::from_utf8(bytes)
                .map_err(|_| problem(path.clone(), "is not PEM text once decoded".into()))?;
            (path, text)
        }
        _ => {
            return Err(problem(
                format!("data.{name}"),
                format!("is missing; a kubernetes.io/tls Secret holds {name} (PEM)"),
            ))
        }
    };
    let has_block = text.lines().any(|l| {
        let l = l.trim();
        l.starts_with("-----BEGIN ") && l.ends_with(&format!("{label}-----"))
    });
    if !has_block {
        // The value is never quoted: it may be a private key.
        return Err(problem(
            path,
            format!("holds no PEM {label} block (-----BEGIN ...{label}-----)"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_core::source::Origin;
    use serde_json::json;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nsecretsecret\n-----END PRIVATE KEY-----\n";

    fn doc(value: Value) -> SourceDoc {
        SourceDoc {
            origin: Origin {
                file: "certs.yaml".into(),
                document: 2,
                item: None,
            },
            value,
        }
    }

    fn key() -> ObjectKey {
        ObjectKey {
            namespace: "infra".into(),
            name: "edge-cert".into(),
        }
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn data_is_decoded_and_string_data_read_as_written() {
        let encoded = doc(
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": b64(CERT), "tls.key": b64(KEY)}}),
        );
        let secret = parse(&encoded, &key()).unwrap().unwrap();
        assert_eq!(
            (
                secret.certificate_chain.as_str(),
                secret.private_key.as_str()
            ),
            (CERT, KEY)
        );
        let plain = doc(
            json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": CERT, "tls.key": KEY}}),
        );
        assert_eq!(
            parse(&plain, &key()).unwrap().unwrap(),
            secret.clone_with_origin(plain.origin.clone())
        );
        assert!(parse(&doc(json!({"type": "Opaque"})), &key()).is_none());
    }

    #[test]
    fn a_bad_field_is_named_and_the_key_is_never_shown() {
        let cases = [
            (
                json!({"tls.crt": b64(CERT)}),
                "field data.tls.key: is missing",
            ),
            (
                json!({"tls.crt": "%%%", "tls.key": b64(KEY)}),
                "field data.tls.crt: is not base64",
            ),
            (
                json!({"tls.crt": b64(CERT), "tls.key": b64("secretsecret")}),
                "field data.tls.key: holds no PEM PRIVATE KEY block",
            ),
        ];
        for (data, expected) in cases {
            let err = parse(
                &doc(json!({"type": "kubernetes.io/tls", "data": data})),
                &key(),
            )
            .unwrap()
            .unwrap_err()
            .to_string();
            assert!(
                err.contains(&format!("Secret infra/edge-cert: {expected}")),
                "{err}"
            );
            assert!(!err.contains("secretsecret"), "{err}");
        }
        let ok = parse(&doc(json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": CERT, "tls.key": KEY}})), &key())
            .unwrap()
            .unwrap();
        assert!(!format!("{ok:?}").contains("secretsecret"));
    }

    impl TlsSecret {
        fn clone_with_origin(&self, origin: Origin) -> TlsSecret {
            TlsSecret {
                origin,
                ..self.clone()
            }
        }
    }
}
