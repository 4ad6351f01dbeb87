//! Milliseconds as a protobuf JSON `Duration` string, the form Envoy's YAML
//! and JSON loaders accept (`"0.100s"`, `"5s"`).

/// `100` -> `"0.100s"`, `5000` -> `"5s"`, `0` -> `"0s"`.
pub fn from_ms(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    if millis == 0 {
        format!("{secs}s")
    } else {
        format!("{secs}.{millis:03}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_drop_the_fraction_and_millis_keep_three_digits() {
        assert_eq!(from_ms(0), "0s");
        assert_eq!(from_ms(5000), "5s");
        assert_eq!(from_ms(100), "0.100s");
        assert_eq!(from_ms(1_005), "1.005s");
        assert_eq!(from_ms(86_400_000), "86400s");
    }
}
