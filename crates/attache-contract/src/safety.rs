//! What a policy may not do: the one definition of the header and retry
//! rules of docs/semantics.md ("What a policy may not do").
//!
//! The resolver checks policies with these functions (the policy becomes
//! `Invalid`, with file, document and field path) and the filter checks every
//! document with the same functions (the document is refused, the last good
//! one keeps serving). Both callers are tested against the tables below, so
//! the generator and the data plane cannot disagree on what is safe.
//!
//! Pure and allocation-free: this module is compiled into the `.wasm`.

/// At most this many retry attempts (GEP-1731 leaves the bound to the
/// implementation; a larger count is a retry storm, not resilience).
pub const MAX_RETRY_ATTEMPTS: u32 = 10;

/// The status codes a retry may name (`retry.codes`): 4xx and 5xx.
pub const RETRY_CODE_MIN: u16 = 400;
pub const RETRY_CODE_MAX: u16 = 599;

/// Whether `code` may be retried on.
pub fn is_retriable_code(code: u16) -> bool {
    (RETRY_CODE_MIN..=RETRY_CODE_MAX).contains(&code)
}

/// The Envoy `retry_on` triggers (HTTP and gRPC) a policy may name
/// (`retry.retryOn`); the resolver refuses any other.
pub const RETRY_TRIGGERS: &[&str] = &[
    "5xx",
    "gateway-error",
    "reset",
    "reset-before-request",
    "connect-failure",
    "envoy-ratelimited",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "http3-post-connect-failure",
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// The gRPC triggers of [`RETRY_TRIGGERS`] (Envoy's `retry_grpc_on`, Envoy
/// Gateway's names): Envoy reads them only from a route's `retry_grpc_on`
/// or the `x-envoy-retry-grpc-on` request header, never from
/// `x-envoy-retry-on`, so the filter sends each trigger where Envoy reads it
/// ([`is_grpc_retry_trigger`]).
pub const GRPC_RETRY_TRIGGERS: &[&str] = RETRY_TRIGGERS.split_at(11).1;

/// Whether `trigger` is one of Envoy's gRPC retry triggers.
pub fn is_grpc_retry_trigger(trigger: &str) -> bool {
    GRPC_RETRY_TRIGGERS.contains(&trigger)
}

/// Whether a document may carry `trigger` in `retryOn`: a token, since it
/// travels in a comma-separated header. Deliberately wider than
/// [`RETRY_TRIGGERS`]: the filter forwards a trigger a newer resolver knows
/// (Envoy ignores one it does not), and every trigger of the list passes.
pub fn is_retry_trigger(trigger: &str) -> bool {
    is_token(trigger)
}

/// At most this many bytes in one header value.
pub const MAX_HEADER_VALUE_BYTES: usize = 4096;

/// At most this many header operations (set + add + remove) per direction of
/// one entry.
pub const MAX_HEADER_OPERATIONS: usize = 64;

/// At most this many bytes in one header name: Gateway API's own bound
/// (`HTTPHeaderName`, maxLength 256). The CRDs state it too, and it bounds
/// the cost of their case-insensitive uniqueness rule.
pub const MAX_HEADER_NAME_BYTES: usize = 256;

/// Why a header name may not be used by a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRefusal {
    /// Not an RFC 9110 token (empty, or a byte outside `tchar`).
    NotAToken,
    /// An HTTP/2 or HTTP/3 pseudo-header (`:path`, `:authority`, ...).
    PseudoHeader,
    /// `host`: changing it re-routes the request past every route match.
    Host,
    /// Message framing or a hop-by-hop header: changing it desynchronises
    /// the proxy and the backend (request smuggling) or the client.
    Framing,
    /// An `x-envoy-*` header: Envoy's router acts on these, so a policy could
    /// bypass the typed `timeouts` and `retry` settings that `explain` shows.
    RouterControl,
    /// Longer than [`MAX_HEADER_NAME_BYTES`].
    TooLong,
}

impl NameRefusal {
    /// One sentence for a message: what is wrong.
    pub fn reason(self) -> &'static str {
        match self {
            NameRefusal::NotAToken => "is not an RFC 9110 header name (token)",
            NameRefusal::PseudoHeader => "is a pseudo-header",
            NameRefusal::Host => "would re-route the request past every route match",
            NameRefusal::Framing => {
                "is a framing or hop-by-hop header; changing it allows request smuggling"
            }
            NameRefusal::RouterControl => "is an Envoy router control header",
            NameRefusal::TooLong => "is longer than 256 bytes, Gateway API's limit",
        }
    }

    /// What to do instead.
    pub fn hint(self) -> &'static str {
        match self {
            NameRefusal::NotAToken => {
                "use letters, digits and !#$%&'*+-.^_`|~ only, e.g. x-request-id"
            }
            NameRefusal::PseudoHeader | NameRefusal::Host => {
                "route by hostname with HTTPRoute.spec.hostnames instead"
            }
            NameRefusal::Framing => "Envoy sets these itself; remove the operation",
            NameRefusal::RouterControl => {
                "use the typed timeouts and retry settings, which explain shows"
            }
            NameRefusal::TooLong => "use a shorter header name",
        }
    }
}

/// The framing and hop-by-hop headers a policy may not touch (RFC 9110
/// section 7.6.1 and RFC 9112 sections 6 and 7; `proxy-connection` and
/// `keep-alive` are the legacy hop-by-hop names proxies still honour).
pub const FRAMING_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
];

/// RFC 9110 `tchar`.
#[inline(always)]
pub fn is_tchar(b: u8) -> bool {
    TCHARS[usize::from(b)]
}

/// Whether each byte is a `tchar`: one look-up per byte, where searching
/// the 15 symbols cost each header name checked at load about 200
/// instructions (bench/findings.md, issue 31).
const TCHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let symbols = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < symbols.len() {
        table[symbols[i] as usize] = true;
        i += 1;
    }
    table
};

/// RFC 9110 `token`: header names and methods.
pub fn is_token(s: &str) -> bool {
    // A plain loop: the filter checks every profile's names and triggers at
    // load, and opt-level z leaves an iterator's closure a call per byte.
    for &b in s.as_bytes() {
        if !TCHARS[usize::from(b)] {
            return false;
        }
    }
    !s.is_empty()
}

/// Whether a policy may set, add or remove the header `name` (any case).
/// Pseudo-headers are reported as such rather than as a bad token, because
/// that is what a user who wrote `:path` meant.
pub fn check_policy_header_name(name: &str) -> Result<(), NameRefusal> {
    if name.as_bytes().first() == Some(&b':') {
        return Err(NameRefusal::PseudoHeader);
    }
    if !is_token(name) {
        return Err(NameRefusal::NotAToken);
    }
    if name.len() > MAX_HEADER_NAME_BYTES {
        return Err(NameRefusal::TooLong);
    }
    if name.eq_ignore_ascii_case("host") {
        return Err(NameRefusal::Host);
    }
    // The length first: the filter checks every profile's names at load.
    let framing = |f: &&str| f.len() == name.len() && name.eq_ignore_ascii_case(f);
    if FRAMING_HEADERS.iter().any(framing) {
        return Err(NameRefusal::Framing);
    }
    if name.len() >= 8 && name.as_bytes()[..8].eq_ignore_ascii_case(b"x-envoy-") {
        return Err(NameRefusal::RouterControl);
    }
    Ok(())
}

/// Why a header value may not be used by a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRefusal {
    /// A control character other than HTAB (0x00-0x1F, 0x7F). CR and LF
    /// split headers; the others make Envoy reset the stream.
    ControlCharacter { byte: u8, at: usize },
    /// Leading or trailing space or tab: stripped on the wire, so the
    /// backend would see another value than `explain` shows.
    SurroundingWhitespace,
    /// Longer than [`MAX_HEADER_VALUE_BYTES`].
    TooLong { bytes: usize },
}

impl ValueRefusal {
    /// One sentence for a message: what is wrong.
    pub fn reason(self) -> String {
        match self {
            ValueRefusal::ControlCharacter { byte, at } => {
                format!("contains the control character 0x{byte:02X} at byte {at}")
            }
            ValueRefusal::SurroundingWhitespace => "has leading or trailing whitespace".to_string(),
            ValueRefusal::TooLong { bytes } => {
                format!("is {bytes} bytes long, over the limit of {MAX_HEADER_VALUE_BYTES}")
            }
        }
    }

    /// What to do instead.
    pub fn hint(self) -> &'static str {
        match self {
            ValueRefusal::ControlCharacter { .. } => {
                "header values may hold visible characters, spaces and tabs only"
            }
            ValueRefusal::SurroundingWhitespace => "trim the value",
            ValueRefusal::TooLong { .. } => "keep header values under 4 KiB",
        }
    }
}

/// Whether a policy may send `value` as a header value.
pub fn check_header_value(value: &str) -> Result<(), ValueRefusal> {
    if value.len() > MAX_HEADER_VALUE_BYTES {
        return Err(ValueRefusal::TooLong { bytes: value.len() });
    }
    if let Some((at, &byte)) = value
        .as_bytes()
        .iter()
        .enumerate()
        .find(|(_, &b)| (b < 0x20 && b != b'\t') || b == 0x7f)
    {
        return Err(ValueRefusal::ControlCharacter { byte, at });
    }
    let is_ws = |b: u8| b == b' ' || b == b'\t';
    let bytes = value.as_bytes();
    if bytes.first().is_some_and(|&b| is_ws(b)) || bytes.last().is_some_and(|&b| is_ws(b)) {
        return Err(ValueRefusal::SurroundingWhitespace);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tchar_table_is_rfc_9110s_tchar() {
        let symbols = b"!#$%&'*+-.^_`|~";
        for b in 0..=255u8 {
            let rfc = b.is_ascii_alphanumeric() || symbols.contains(&b);
            assert_eq!(is_tchar(b), rfc, "byte {b}");
        }
    }

    #[test]
    fn the_grpc_triggers_are_envoys_retry_grpc_on_names() {
        assert_eq!(
            GRPC_RETRY_TRIGGERS,
            [
                "cancelled",
                "deadline-exceeded",
                "internal",
                "resource-exhausted",
                "unavailable"
            ]
        );
        assert!(!is_grpc_retry_trigger("5xx"));
        assert!(!is_grpc_retry_trigger("connect-failure"));
    }

    #[test]
    fn ordinary_names_are_allowed_in_any_case() {
        for name in [
            "x-request-id",
            "X-Season",
            "cache-control",
            "x-envoyish",
            "x_custom.1~",
        ] {
            assert_eq!(check_policy_header_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn each_refused_name_has_its_reason() {
        let table = [
            (":path", NameRefusal::PseudoHeader),
            (":authority", NameRefusal::PseudoHeader),
            ("Host", NameRefusal::Host),
            ("content-length", NameRefusal::Framing),
            ("Transfer-Encoding", NameRefusal::Framing),
            ("connection", NameRefusal::Framing),
            ("keep-alive", NameRefusal::Framing),
            ("proxy-connection", NameRefusal::Framing),
            ("upgrade", NameRefusal::Framing),
            ("te", NameRefusal::Framing),
            ("trailer", NameRefusal::Framing),
            (
                "x-envoy-upstream-stream-duration-ms",
                NameRefusal::RouterControl,
            ),
            (
                "X-Envoy-Hedge-On-Per-Try-Timeout",
                NameRefusal::RouterControl,
            ),
            ("x-envoy-", NameRefusal::RouterControl),
            ("", NameRefusal::NotAToken),
            ("a b", NameRefusal::NotAToken),
            ("a,b", NameRefusal::NotAToken),
            ("é", NameRefusal::NotAToken),
        ];
        for (name, want) in table {
            assert_eq!(check_policy_header_name(name), Err(want), "{name:?}");
        }
        let at_limit = "x".repeat(MAX_HEADER_NAME_BYTES);
        assert_eq!(check_policy_header_name(&at_limit), Ok(()));
        let over = "x".repeat(MAX_HEADER_NAME_BYTES + 1);
        assert_eq!(check_policy_header_name(&over), Err(NameRefusal::TooLong));
        assert!(NameRefusal::TooLong
            .reason()
            .contains(&MAX_HEADER_NAME_BYTES.to_string()));
    }

    #[test]
    fn values_refuse_control_characters_but_allow_tabs_inside() {
        assert_eq!(check_header_value("a\tb, \"quoted\" é"), Ok(()));
        assert_eq!(check_header_value(""), Ok(()));
        assert_eq!(
            check_header_value("a\u{1}b"),
            Err(ValueRefusal::ControlCharacter { byte: 1, at: 1 })
        );
        assert_eq!(
            check_header_value("ab\u{7f}"),
            Err(ValueRefusal::ControlCharacter { byte: 0x7f, at: 2 })
        );
        assert_eq!(
            check_header_value("a\r\nx-injected: 1"),
            Err(ValueRefusal::ControlCharacter { byte: b'\r', at: 1 })
        );
        assert_eq!(
            check_header_value(" a"),
            Err(ValueRefusal::SurroundingWhitespace)
        );
        assert_eq!(
            check_header_value("a\t"),
            Err(ValueRefusal::SurroundingWhitespace)
        );
    }

    #[test]
    fn values_have_a_size_limit() {
        let at_limit = "v".repeat(MAX_HEADER_VALUE_BYTES);
        assert_eq!(check_header_value(&at_limit), Ok(()));
        let over = "v".repeat(MAX_HEADER_VALUE_BYTES + 1);
        assert_eq!(
            check_header_value(&over),
            Err(ValueRefusal::TooLong {
                bytes: MAX_HEADER_VALUE_BYTES + 1
            })
        );
    }
}
