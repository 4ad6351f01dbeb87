//! The table encoding (schema 3) as the filter loads it: refused whole when
//! hostile or truncated, naming the field; an update reuses only what is
//! byte-for-byte the same, and never serves a route with the settings of
//! another generation.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::control;
use crate::envelope::PreviousPieces;
use crate::ops::HeaderOp;
use attache_contract::table;

fn document(timeout: u64, istio: bool) -> DataPlaneDocument {
    let mut d = doc(json!([
        entry(
            "http/shop/a/0",
            json!({"hostnames": ["*.example.com"], "matches": [{"path": {"type": "Exact", "value": "/a"}}],
                   "timeouts": {"requestMs": timeout}})
        ),
        entry(
            "http/shop/b/0",
            json!({"matches": [{"path": {"type": "RegularExpression", "value": "/r/.*"},
                   "headers": [{"name": "x-h", "type": "RegularExpression", "value": ".*"}]}],
                   "retry": {"attempts": 2, "codes": [503]},
                   "responseHeaders": {"set": [{"name": "x-r", "value": "1"}]}})
        ),
        entry("http/shop/c/0", json!({"timeouts": {"requestMs": 7}})),
    ]));
    d["options"] = json!({"istioRouteNames": istio});
    let resolved: attache_contract::Document = serde_json::from_value(d).unwrap();
    DataPlaneDocument::encode(&resolved)
}

fn timeout_of(config: &CompiledConfig, name: &str) -> Option<String> {
    let route = config.route_named(name)?;
    route.request_ops.iter().find_map(|op| match op {
        HeaderOp::Set(n, v) if **n == *control::RQ_TIMEOUT_MS => Some(v.to_string()),
        _ => None,
    })
}

#[test]
fn every_truncation_is_refused_naming_a_field() {
    let bytes = table::encode(&document(1000, false));
    for end in 0..bytes.len() {
        let e = CompiledConfig::from_bytes(&bytes[..end]).unwrap_err();
        assert!(e.path().starts_with('$'), "cut at {end}: {e}");
    }
}

#[test]
fn a_table_in_the_envelope_loads_like_the_json() {
    let d = document(1000, false);
    let sealed = serde_json::to_vec(&attache_contract::envelope::seal(&table::encode(&d))).unwrap();
    let config = CompiledConfig::from_bytes(&sealed).unwrap();
    assert_eq!(config.route_count(), 3);
    assert_eq!(
        timeout_of(&config, "http/shop/a/0").as_deref(),
        Some("1000")
    );
}

#[test]
fn an_update_takes_the_new_settings_and_leaves_the_old_generation_alone() {
    let old = Rc::new(CompiledConfig::load(table::encode(&document(1000, false)), None).unwrap());
    // Compiled in the old generation before the update.
    assert_eq!(timeout_of(&old, "http/shop/a/0").as_deref(), Some("1000"));
    assert_eq!(timeout_of(&old, "http/shop/c/0").as_deref(), Some("7"));
    let new = CompiledConfig::load(table::encode(&document(2000, false)), Some(&old)).unwrap();
    assert_eq!(timeout_of(&new, "http/shop/a/0").as_deref(), Some("2000"));
    assert_eq!(timeout_of(&new, "http/shop/c/0").as_deref(), Some("7"));
    assert_eq!(timeout_of(&old, "http/shop/a/0").as_deref(), Some("1000"));
    let mut host = FakeHost::default();
    host.request
        .push((":authority".into(), b"x.example.com".to_vec()));
    host.request.push((":path".into(), b"/a".to_vec()));
    let routed_new = routed(&Rc::new(new), &mut host);
    assert_eq!(routed_new.as_deref(), Some("http/shop/a/0"));
}

#[test]
fn a_policy_edit_keeps_the_fallback_table_and_it_finds_the_new_settings() {
    let old = CompiledConfig::load(table::encode(&document(1000, false)), None).unwrap();
    let built = old.fallback();
    let new =
        Rc::new(CompiledConfig::load(table::encode(&document(2000, false)), Some(&old)).unwrap());
    // The same table, not built again: it holds entry numbers, not routes.
    assert!(std::ptr::eq(built, new.fallback()));
    let mut host = FakeHost::default();
    host.request
        .push((":authority".into(), b"x.example.com".to_vec()));
    host.request.push((":path".into(), b"/a".to_vec()));
    let stream = request(&new, &mut host);
    let route = stream.route().unwrap();
    assert_eq!(&*route.name, "http/shop/a/0");
    assert!(route.request_ops.iter().any(
        |op| matches!(op, HeaderOp::Set(n, v) if **n == *control::RQ_TIMEOUT_MS && &**v == "2000")
    ));
}

#[test]
fn an_edited_profile_is_validated_again_even_after_a_good_generation() {
    let old = CompiledConfig::load(table::encode(&document(1000, false)), None).unwrap();
    let mut bad = document(1000, false);
    bad.profiles[1].retry.as_mut().unwrap().codes = Some(vec![302]);
    let e = CompiledConfig::load(table::encode(&bad), Some(&old)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "$.profiles[1].retry.codes[0]: status code 302 cannot be retried: expected 400-599"
    );
}

#[test]
fn the_same_entries_keyed_another_way_are_indexed_again() {
    let plain = CompiledConfig::load(table::encode(&document(1000, false)), None).unwrap();
    let istio = CompiledConfig::load(table::encode(&document(1000, true)), Some(&plain)).unwrap();
    assert!(istio.route_named("shop.a.0").is_some());
    assert!(istio.route_named("http/shop/a/0").is_none());
    let back = CompiledConfig::load(table::encode(&document(1000, false)), Some(&istio)).unwrap();
    assert!(back.route_named("http/shop/a/0").is_some());
}

#[test]
fn a_duplicate_name_is_refused_naming_both_places() {
    // Under istiod's names too (proven unique at load, before istiod's
    // names are keyed on the first lookup); and for names istiod has none
    // for.
    for (istio, name) in [
        (false, "http/shop/a/0"),
        (true, "http/shop/a/0"),
        (true, "x/y/"),
    ] {
        let mut d = document(1000, istio);
        d.groups[0].routes[0].name = name.into();
        d.groups[2].routes[0].name = name.into();
        let e = CompiledConfig::load(table::encode(&d), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("$.groups[2].routes[0].name: route name {name:?} is already used by $.groups[0].routes[0]; names must be unique")
        );
    }
}

/// The table of `doc` sealed in pieces, as `attache render` delivers it.
fn chunked(doc: &DataPlaneDocument) -> Vec<u8> {
    let (bytes, cuts) = table::encode_with_cuts(doc);
    serde_json::to_vec(&attache_contract::envelope::seal_chunks(&bytes, &cuts)).unwrap()
}

#[test]
fn an_update_in_pieces_reuses_the_unchanged_ones_and_reads_as_a_fresh_load() {
    let old = CompiledConfig::from_owned_bytes(chunked(&document(1000, false))).unwrap();
    let next = chunked(&document(2000, false));
    let updated = CompiledConfig::from_owned_bytes_after(next.clone(), Some(&old)).unwrap();
    let fresh = CompiledConfig::from_owned_bytes(next).unwrap();
    for name in ["http/shop/a/0", "http/shop/b/0", "http/shop/c/0"] {
        assert_eq!(
            timeout_of(&updated, name),
            timeout_of(&fresh, name),
            "{name}"
        );
        assert_eq!(
            updated.route_named(name).map(|r| r.request_ops.clone()),
            fresh.route_named(name).map(|r| r.request_ops.clone())
        );
    }
    assert_eq!(
        timeout_of(&updated, "http/shop/a/0").as_deref(),
        Some("2000")
    );
    // The unchanged pieces came from the previous configuration.
    let envelope: attache_contract::envelope::Envelope =
        serde_json::from_slice(&chunked(&document(2000, false))).unwrap();
    let last = envelope.chunks.len() - 1;
    let piece = &envelope.chunks[last];
    assert!(updated
        .chunk_bytes(last, &piece.data, piece.length)
        .is_some());
    assert!(updated.chunk_bytes(last, "other", piece.length).is_none());
}

#[test]
fn groups_left_in_their_pieces_are_the_previous_ones_and_read_alike() {
    // Enough routes for several pieces of groups.
    let routes: Vec<_> = (0..1200)
        .map(|i| {
            entry(
                &format!("http/shop/r{i}/0"),
                json!({"timeouts": {"requestMs": 100 + i}}),
            )
        })
        .collect();
    let encode = |first: u64| {
        let mut routes = routes.clone();
        routes[0]["timeouts"]["requestMs"] = json!(first);
        let resolved: attache_contract::Document =
            serde_json::from_value(doc(json!(routes))).unwrap();
        chunked(&DataPlaneDocument::encode(&resolved))
    };
    let old = CompiledConfig::from_owned_bytes(encode(100)).unwrap();
    let next = encode(5);
    let updated = CompiledConfig::from_owned_bytes_after(next.clone(), Some(&old)).unwrap();
    let fresh = CompiledConfig::from_owned_bytes(next.clone()).unwrap();
    assert_eq!(updated.route_count(), 1200);
    for name in ["http/shop/r0/0", "http/shop/r1/0", "http/shop/r1199/0"] {
        assert_eq!(
            timeout_of(&updated, name),
            timeout_of(&fresh, name),
            "{name}"
        );
    }
    assert_eq!(timeout_of(&updated, "http/shop/r0/0").as_deref(), Some("5"));
    // And the next update again, from the one that reused.
    let again = CompiledConfig::from_owned_bytes_after(encode(6), Some(&updated)).unwrap();
    assert_eq!(timeout_of(&again, "http/shop/r0/0").as_deref(), Some("6"));
    assert_eq!(
        timeout_of(&again, "http/shop/r1199/0").as_deref(),
        Some("1299")
    );
    assert_eq!(again.fallback().len(), 1200);
}

#[test]
fn a_bad_piece_is_refused_naming_it_even_where_the_previous_had_it_right() {
    let doc = document(1000, false);
    let old = CompiledConfig::from_owned_bytes(chunked(&doc)).unwrap();
    let mut envelope: attache_contract::envelope::Envelope =
        serde_json::from_slice(&chunked(&doc)).unwrap();
    // Same text, another length: not reused, and the sum no longer holds.
    envelope.chunks[1].length += 1;
    let bytes = serde_json::to_vec(&envelope).unwrap();
    let e = CompiledConfig::from_owned_bytes_after(bytes, Some(&old)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("$.chunks: compressed pluginConfig: the chunks' lengths add up to"),
        "{e}"
    );
    envelope.length += 1;
    let bytes = serde_json::to_vec(&envelope).unwrap();
    let e = CompiledConfig::from_owned_bytes_after(bytes, Some(&old)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("$.chunks[1].length: compressed pluginConfig: declares"),
        "{e}"
    );
    envelope.chunks[1].length -= 1;
    envelope.length -= 1;
    envelope.chunks[1].data.insert(0, '!');
    let bytes = serde_json::to_vec(&envelope).unwrap();
    let e = CompiledConfig::from_owned_bytes_after(bytes, Some(&old)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("$.chunks[1].data: compressed pluginConfig: not standard base64"),
        "{e}"
    );
}

proptest! {
    /// A valid table with bytes changed or cut: refused with a field, or
    /// accepted; accepted means the contract reads it too and every entry
    /// and the fallback table can be built from it.
    #[test]
    fn a_damaged_table_is_refused_or_served_whole(
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        istio in any::<bool>(),
    ) {
        let mut bytes = table::encode(&document(1000, istio));
        for (at, byte) in changes {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if cut.index(4) == 0 {
            bytes.truncate(cut.index(bytes.len()));
        }
        match CompiledConfig::from_bytes(&bytes) {
            Err(e) => prop_assert!(e.path().starts_with('$'), "{e}"),
            Ok(config) => {
                let decoded = table::decode(&bytes);
                prop_assert!(decoded.is_ok());
                let decoded = decoded.unwrap();
                for route in decoded.groups.iter().flat_map(|g| &g.routes) {
                    if !decoded.options.istio_route_names {
                        prop_assert!(config.route_named(&route.name).is_some());
                    }
                }
                prop_assert_eq!(config.fallback().len(), config.candidate_count());
            }
        }
    }
}
