//! An HTTPS listener's `tls`: the Secrets of the Gateway's namespace it
//! terminates with reach the resolution in order; any other shape is an
//! error naming the field (docs/envoy.md, "HTTPS listeners").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use attache_core::topology::ObjectKey;
use attache_core::{resolve, Severity};
use common::*;

fn gateway(tls: &str) -> String {
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: edge, namespace: infra}}
spec:
  gatewayClassName: gc
  listeners:
  - {{name: http, port: 80, protocol: HTTP}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: shop.example.com
    tls: {tls}
"#
    )
}

fn errors(yaml: &str) -> Vec<String> {
    inputs(yaml)
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{}: {}", d.field.clone().unwrap_or_default(), d.message))
        .collect()
}

#[test]
fn certificate_refs_default_to_secrets_of_the_gateways_namespace() {
    let yaml = gateway("{certificateRefs: [{name: shop-cert}, {kind: Secret, group: \"\", name: old-cert, namespace: infra}]}");
    let inputs = inputs(&yaml);
    assert!(errors(&yaml).is_empty(), "{:#?}", inputs.diagnostics);
    let resolved = resolve(&inputs, &key("infra/edge")).unwrap();
    let https = &resolved.resolution.listeners[1];
    let refs: Vec<String> = https
        .tls
        .as_ref()
        .unwrap()
        .certificate_refs
        .iter()
        .map(ObjectKey::to_string)
        .collect();
    assert_eq!(refs, ["infra/shop-cert", "infra/old-cert"]);
    assert_eq!(resolved.resolution.listeners[0].tls, None);
}

#[test]
fn each_unusable_tls_shape_is_an_error_naming_its_field() {
    for (tls, expected) in [
        ("{mode: Passthrough, certificateRefs: [{name: c}]}", "spec.listeners[1].tls.mode: mode \"Passthrough\" is not served: Attaché terminates TLS"),
        ("{certificateRefs: [{kind: ConfigMap, name: c}]}", "spec.listeners[1].tls.certificateRefs[0].kind: ConfigMap of group \"\" is not a certificate source"),
        ("{certificateRefs: [{name: c, namespace: other}]}", "spec.listeners[1].tls.certificateRefs[0].namespace: Secret other/c is in another namespace than the Gateway"),
        ("{certificateRefs: []}", "spec.listeners[1].tls.certificateRefs: no certificate to terminate TLS with"),
    ] {
        assert_eq!(errors(&gateway(tls)), [expected], "{tls}");
    }
}
