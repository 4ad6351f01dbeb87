//! `attache status`: GEP-713's (2025) Programmed condition per
//! ancestor, computed as if applied (docs/status.md), after the others.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, fixture};

fn programmed(name: &str) -> serde_json::Value {
    let shop = fixture("shop.yaml").display().to_string();
    let out = attache(&["status", "-f", &shop, "-o", "json", "--name", name]);
    assert_eq!(out.status.code(), Some(0));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list["items"][0]["status"]["ancestors"][0]["conditions"].clone()
}

#[test]
fn programmed_follows_attached_in_the_geps_words_with_the_strategy() {
    assert_eq!(
        programmed("checkout-fast")[2],
        serde_json::json!({"type": "Programmed", "status": "True", "reason": "Programmed",
            "message": "supplies every field it sets on 1 route rule(s); strategy: Custom (field defaults)"})
    );
    assert_eq!(
        programmed("class-defaults")[2],
        serde_json::json!({"type": "Programmed", "status": "True", "reason": "PartiallyProgrammed",
            "message": "5 of 9 field values over 3 route rule(s) are in effect; the others went to HTTPRoute \
                        shop/storefront rule 1 (inline); RoutePolicy shop/api-retries (defaults @ HTTPRoute \
                        shop/storefront rule api); RoutePolicy shop/checkout-fast (defaults @ HTTPRoute shop/api \
                        rule checkout); strategy: Custom (field defaults)"})
    );
}
