//! The one definition of a Kubernetes RFC 1123 subdomain (`IsDNS1123Subdomain`):
//! at most 253 characters of dot-separated labels, each of lower-case letters,
//! digits and `-`, starting and ending with a letter or digit. Gateway API's
//! `SectionName` (a listener's name) has exactly this pattern
//! (`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`,
//! `MaxLength=253`, kubernetes-sigs/gateway-api apis/v1/shared_types.go), and
//! so do Secret names; the parser and the CLI both check through here.

const MAX_LEN: usize = 253;

/// Why `name` is not an RFC 1123 subdomain, or `None` when it is one.
pub fn subdomain_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > MAX_LEN {
        return Some("it is longer than 253 characters");
    }
    if name.split('.').all(label_ok) {
        None
    } else {
        Some("each dot-separated part must be lower-case letters, digits and '-', starting and ending with a letter or digit")
    }
}

fn label_ok(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            is_alnum(*first) && is_alnum(*last) && bytes.iter().all(|b| is_alnum(*b) || *b == b'-')
        }
        _ => false,
    }
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::subdomain_problem;

    #[test]
    fn subdomains_are_dot_separated_lower_case_labels_within_253_characters() {
        for good in ["a", "http", "api.v1", "a-b.c-d", "0", &"a".repeat(253)] {
            assert_eq!(subdomain_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "A",
            "a..b",
            "a.-b",
            "-a",
            "a-",
            ".a",
            "a.",
            "../x",
            "a/b",
            "a_b",
            "a b",
            &"a".repeat(254),
        ] {
            assert!(subdomain_problem(bad).is_some(), "{bad:?}");
        }
    }
}
