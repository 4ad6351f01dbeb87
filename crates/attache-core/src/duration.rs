//! Gateway API durations (GEP-2257): `^([0-9]{1,5}(h|m|s|ms)){1,4}$`.
//! Hand-parsed rather than pulled in a regex engine: the grammar is four
//! tokens and we need the value in milliseconds anyway.

/// The pattern, quoted in every hint so users see the exact rule.
pub const PATTERN: &str = "^([0-9]{1,5}(h|m|s|ms)){1,4}$";

/// Milliseconds of a valid Gateway API duration, or `None` when the text
/// does not match [`PATTERN`]. Units may repeat and come in any order, as
/// the regex allows (`10s30m1h` is valid).
pub fn parse_millis(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut total: u64 = 0;
    let mut parts = 0;
    while at < bytes.len() {
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        let digits = at - start;
        if digits == 0 || digits > 5 {
            return None;
        }
        let number: u64 = text.get(start..at)?.parse().ok()?;
        let unit_ms = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(b'm'), Some(b's')) => {
                at += 2;
                1
            }
            (Some(b'h'), _) => {
                at += 1;
                3_600_000
            }
            (Some(b'm'), _) => {
                at += 1;
                60_000
            }
            (Some(b's'), _) => {
                at += 1;
                1_000
            }
            _ => return None,
        };
        total = total.checked_add(number.checked_mul(unit_ms)?)?;
        parts += 1;
        if parts > 4 {
            return None;
        }
    }
    (parts > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_durations_convert_to_millis() {
        assert_eq!(parse_millis("0s"), Some(0));
        assert_eq!(parse_millis("1500ms"), Some(1500));
        assert_eq!(parse_millis("10s"), Some(10_000));
        assert_eq!(parse_millis("1h"), Some(3_600_000));
        assert_eq!(
            parse_millis("10s30m1h"),
            Some(10_000 + 1_800_000 + 3_600_000)
        );
        assert_eq!(parse_millis("1m1m1m1m"), Some(240_000));
        assert_eq!(parse_millis("99999ms"), Some(99_999));
    }

    #[test]
    fn invalid_durations_are_rejected() {
        for bad in [
            "",
            "1d",
            "1.5s",
            "-1s",
            "s",
            "10",
            "100000ms",
            "1m1m1m1m1m",
            "1 s",
            "1S",
            "1msx",
        ] {
            assert_eq!(parse_millis(bad), None, "{bad:?} should be invalid");
        }
    }
}
