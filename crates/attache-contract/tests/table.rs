//! The table encoding (schema 3) against the schema-2 document it carries.

use attache_contract::schema2::DataPlaneDocument;
use attache_contract::table::{self, TableError};
use attache_contract::{
    Document, GrpcMethodMatch, Header, HeaderChanges, HeaderMatch, HttpRouteMatch, Options,
    PathMatch, PathMatchType, QueryParamMatch, Retry, RouteEntry, StringMatchType, Timeouts,
};

fn entry(i: usize) -> RouteEntry {
    RouteEntry {
        name: format!("http/shop/r{i}/0"),
        hostnames: if i % 2 == 0 {
            vec!["a.example.com".into()]
        } else {
            vec![]
        },
        matches: vec![HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: format!("/r{i}"),
            }),
            method: (i % 3 == 0).then(|| "GET".into()),
            headers: vec![HeaderMatch {
                kind: StringMatchType::RegularExpression,
                name: "x-v".into(),
                value: "v[0-9]+".into(),
            }],
            query_params: vec![QueryParamMatch {
                kind: StringMatchType::Exact,
                name: "q".into(),
                value: "1".into(),
            }],
            grpc_method: None,
        }],
        settings: attache_contract::Settings {
            timeouts: Some(Timeouts {
                request_ms: Some(1000 + i as u64),
                backend_request_ms: (i % 2 == 1).then_some(7),
            }),
            retry: (i % 4 != 0).then(|| Retry {
                attempts: Some(2),
                codes: Some(vec![503, 504]),
                backoff_ms: Some(25),
                retry_on: Some(vec![
                    "reset".into(),
                    "x-not-known".into(),
                    "unavailable".into(),
                ]),
            }),
            request_headers: Some(HeaderChanges {
                set: vec![Header {
                    name: "x-tenant".into(),
                    value: format!("t{i}"),
                }],
                add: vec![],
                remove: vec!["x-gone".into()],
            }),
            response_headers: (i == 3).then(HeaderChanges::default),
        },
        ..RouteEntry::default()
    }
}

fn document() -> DataPlaneDocument {
    let mut routes: Vec<RouteEntry> = (0..20).map(entry).collect();
    routes.push(RouteEntry {
        name: "http/shop/grpc/0".into(),
        matches: vec![HttpRouteMatch {
            grpc_method: Some(GrpcMethodMatch {
                kind: StringMatchType::Exact,
                service: Some("a.B".into()),
                method: None,
            }),
            ..HttpRouteMatch::default()
        }],
        ..RouteEntry::default()
    });
    let mut options = Options {
        istio_route_names: true,
        ..Options::default()
    };
    options.listener_ports.insert("http".into(), 80);
    DataPlaneDocument::encode(&Document {
        schema_version: 1,
        gateway: "infra/edge".into(),
        options,
        routes,
    })
}

#[test]
fn a_table_decodes_to_the_document_it_encodes() {
    let doc = document();
    let bytes = table::encode(&doc);
    assert!(table::is_table(&bytes));
    assert_eq!(table::decode(&bytes), Ok(doc));
}

#[test]
fn every_truncation_is_refused() {
    let bytes = table::encode(&document());
    for end in 0..bytes.len() {
        assert!(table::decode(&bytes[..end]).is_err(), "cut at {end}");
    }
}

#[test]
fn a_hostile_count_is_refused_before_anything_is_reserved() {
    let mut bytes = table::MAGIC.to_vec();
    bytes.extend([1, b'g', 0, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(table::decode(&bytes), Err(TableError::Length(0xffff_ffff)));
}

#[test]
fn no_json_text_is_taken_for_a_table() {
    for text in [&b"{}"[..], b"\"{}\"", b" {", b"[]"] {
        assert!(!table::is_table(text));
    }
}

#[test]
fn known_retry_triggers_are_numbered_and_others_spelled() {
    // Every trigger a policy may name is one the table numbers (the list
    // may grow at its end, never change).
    for trigger in attache_contract::safety::RETRY_TRIGGERS {
        assert!(table::KNOWN_RETRY_TRIGGERS.contains(trigger), "{trigger}");
    }
    let doc = document();
    let bytes = table::encode(&doc);
    assert!(!bytes.windows(5).any(|w| w == b"reset"));
    assert!(bytes.windows(11).any(|w| w == b"x-not-known"));
    // A number past the list is refused, naming the field.
    let mut record = vec![4u8, 8, 1, 17];
    assert_eq!(
        table::read_profile(&record),
        Err(("retry.retryOn", TableError::Value(17)))
    );
    record[3] = 16;
    let settings = table::read_profile(&record).unwrap();
    assert_eq!(
        settings.retry.unwrap().retry_on,
        Some(vec!["unavailable".to_string()])
    );
}

#[test]
fn numbers_of_one_to_ten_bytes_read_back_and_longer_ones_are_refused() {
    // LEB128 as the writer spells it: 7 bits a byte, the high bit "more".
    fn spell(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }
    for v in [
        0,
        1,
        0x7f,
        0x80,
        0x3fff,
        0x4000,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let bytes = spell(v);
        let mut r = table::Reader::new(&bytes);
        assert_eq!(r.varint(), Ok(v), "{v}");
        assert!(r.is_empty(), "{v}: every byte read");
    }
    // An eleventh byte, or a tenth one carrying more than the 64th bit.
    let eleven = [0xff; 10]
        .iter()
        .chain([&0x00])
        .copied()
        .collect::<Vec<_>>();
    assert_eq!(
        table::Reader::new(&eleven).varint(),
        Err(TableError::Number)
    );
    let mut past_64 = vec![0xff; 9];
    past_64.push(0x02);
    assert_eq!(
        table::Reader::new(&past_64).varint(),
        Err(TableError::Number)
    );
    // Cut short after a continuation byte.
    assert_eq!(
        table::Reader::new(&[0x80]).varint(),
        Err(TableError::Truncated)
    );
}

/// What `Reader::str` must answer: the string's bytes, checked alone.
fn str_alone(r: &mut table::Reader<'_>) -> Result<String, TableError> {
    let bytes = r.bytes()?;
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| TableError::Utf8)
}

#[test]
fn strings_read_from_a_checked_run_are_the_strings_checked_alone() {
    // Strings around numbers whose high byte is not UTF-8, a two-byte
    // character, a string that starts inside one (0xa9 alone) and one that
    // ends inside one (0xc3 alone), an invalid byte, and a string that runs
    // past the end.
    let cases: [&[u8]; 6] = [
        &[2, b'a', b'b', 0x81, 0x01, 3, b'c', b'd', b'e'],
        &[2, 0xc3, 0xa9, 1, b'x', 0x80, 0x01, 2, 0xc3, 0xa9],
        &[3, b'a', 0xc3, 0xa9, 1, 0xa9, 1, b'z'],
        &[1, 0xc3, 1, 0xa9],
        &[3, b'a', 0xff, b'b', 1, b'c'],
        &[1, b'a', 5, b'b'],
    ];
    for case in cases {
        check_strings_and_numbers(case);
    }
    // Many small tables of strings and numbers, bytes drawn from a fixed
    // sequence: ASCII, two-byte characters, halves of them, invalid bytes.
    let mut state = 0x2545_f491_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let alphabet = [b'a', b'/', 0xc3, 0xa9, 0xff, 0x80, 0x01, 0x02, 0x03];
    for _ in 0..2_000 {
        let len = next() as usize % 24;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[next() as usize % alphabet.len()])
            .collect();
        check_strings_and_numbers(&bytes);
    }
}

/// Reads `bytes` as strings, each followed by a number (as a table
/// interleaves them), through `str` and through the reference reading: the
/// same strings, the same errors, at the same places.
fn check_strings_and_numbers(bytes: &[u8]) {
    let (mut fast, mut alone) = (table::Reader::new(bytes), table::Reader::new(bytes));
    for _ in 0..bytes.len() + 1 {
        let got = fast.str().map(str::to_string);
        assert_eq!(got, str_alone(&mut alone), "{bytes:x?}");
        if got.is_err() {
            return;
        }
        assert_eq!(fast.position(), alone.position(), "{bytes:x?}");
        let number = fast.varint();
        assert_eq!(number, alone.varint(), "{bytes:x?}");
        if number.is_err() {
            return;
        }
    }
}
