//! A copy of the request's header map, taken with one host call
//! (`proxy_get_header_map_pairs`) in place of one call per header the
//! request path asks about (docs/filter.md, "The request path").
//!
//! The bytes are proxy-wasm's pair serialisation, as proxy-wasm-cpp-host's
//! `PairsUtil::marshalPairs` (src/pairs_util.cc) writes them, little-endian
//! (Wasm's byte order):
//!
//! ```text
//! u32 pair count
//! (u32 name length, u32 value length) per pair
//! (name bytes, NUL, value bytes, NUL) per pair
//! ```
//!
//! Checked whole when taken, so that a lookup walks it without a failure
//! case; bytes that do not have this shape are no snapshot at all and the
//! caller reads header by header instead (nothing the strip must see is
//! lost to a malformed copy).

/// Bytes per length field.
const WORD: usize = 4;

/// A request header map as the host handed it over, in the host's order
/// (repeated names stay repeated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderSnapshot {
    wire: Vec<u8>,
    pairs: usize,
}

impl HeaderSnapshot {
    /// Takes `wire` if it is a well-formed pair serialisation; an empty
    /// buffer is an empty map (the host's answer for one: it copies ""
    /// rather than a count of zero).
    pub fn from_wire(wire: Vec<u8>) -> Option<Self> {
        if wire.is_empty() {
            return Some(HeaderSnapshot { wire, pairs: 0 });
        }
        let pairs = usize::try_from(word_at(&wire, 0)?).ok()?;
        let mut data = pairs.checked_mul(2 * WORD)?.checked_add(WORD)?;
        for i in 0..pairs {
            let (name, value) = lengths(&wire, i)?;
            for length in [name, value] {
                let terminator = data.checked_add(length)?;
                if *wire.get(terminator)? != 0 {
                    return None;
                }
                data = terminator + 1;
            }
        }
        (data == wire.len()).then_some(HeaderSnapshot { wire, pairs })
    }

    /// The pair serialisation of `pairs`, as the host writes it: what the
    /// fake host hands over, so the tests go through [`Self::from_wire`].
    pub fn to_wire<'a>(pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])> + Clone) -> Vec<u8> {
        let count = pairs.clone().into_iter().count();
        let mut wire = Vec::new();
        wire.extend_from_slice(&wire_length(count));
        for (name, value) in pairs.clone() {
            wire.extend_from_slice(&wire_length(name.len()));
            wire.extend_from_slice(&wire_length(value.len()));
        }
        for (name, value) in pairs {
            for part in [name, value] {
                wire.extend_from_slice(part);
                wire.push(0);
            }
        }
        wire
    }

    /// How many pairs (headers, counting each repeat).
    pub fn len(&self) -> usize {
        self.pairs
    }

    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Every (name, value), in the host's order.
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut data = WORD + self.pairs * 2 * WORD;
        (0..self.pairs).map_while(move |i| {
            // Checked in `from_wire`: every range below is in bounds.
            let (name_length, value_length) = lengths(&self.wire, i)?;
            let name = self.wire.get(data..data + name_length)?;
            data += name_length + 1;
            let value = self.wire.get(data..data + value_length)?;
            data += value_length + 1;
            Some((name, value))
        })
    }

    /// The first value of `name`, as `get_header_map_value` answers it
    /// (Envoy stores header names lower-case and the filter asks in lower
    /// case, so names compare as bytes).
    pub fn first(&self, name: &str) -> Option<&[u8]> {
        self.pairs()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, value)| value)
    }
}

/// The little-endian u32 at byte `at`.
fn word_at(wire: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; WORD] = wire.get(at..at.checked_add(WORD)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Pair `i`'s (name length, value length).
fn lengths(wire: &[u8], i: usize) -> Option<(usize, usize)> {
    let at = WORD + i * 2 * WORD;
    let name = usize::try_from(word_at(wire, at)?).ok()?;
    let value = usize::try_from(word_at(wire, at + WORD)?).ok()?;
    Some((name, value))
}

/// A length as the wire holds it; one beyond u32 (never a header) saturates,
/// which [`HeaderSnapshot::from_wire`] then refuses.
fn wire_length(length: usize) -> [u8; WORD] {
    u32::try_from(length).unwrap_or(u32::MAX).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::HeaderSnapshot;

    fn wire(pairs: &[(&str, &str)]) -> Vec<u8> {
        HeaderSnapshot::to_wire(pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    #[test]
    fn pairs_come_back_in_order_with_repeats_and_empty_values() {
        let sent = [(":path", "/a"), ("x-r", "1"), ("x-e", ""), ("x-r", "2")];
        let snapshot = HeaderSnapshot::from_wire(wire(&sent));
        let Some(snapshot) = snapshot else {
            panic!("a well-formed map is refused")
        };
        let read: Vec<(&[u8], &[u8])> = snapshot.pairs().collect();
        let expected: Vec<(&[u8], &[u8])> = sent
            .iter()
            .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
            .collect();
        assert_eq!(read, expected);
        assert_eq!(snapshot.len(), 4);
        assert_eq!(snapshot.first("x-r"), Some(&b"1"[..]));
        assert_eq!(snapshot.first("x-e"), Some(&b""[..]));
        assert_eq!(snapshot.first("x-absent"), None);
        assert_eq!(snapshot.first("X-R"), None, "names are asked in lower case");
    }

    #[test]
    fn the_bytes_are_those_proxy_wasm_cpp_host_writes() {
        // PairsUtil::marshalPairs of {"a": "bc"}: count, lengths, then
        // NUL-terminated name and value.
        let expected = [1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, b'a', 0, b'b', b'c', 0];
        assert_eq!(wire(&[("a", "bc")]), expected);
    }

    #[test]
    fn an_empty_answer_is_an_empty_map() {
        for empty in [Vec::new(), wire(&[])] {
            let snapshot = HeaderSnapshot::from_wire(empty);
            assert_eq!(snapshot.as_ref().map(HeaderSnapshot::len), Some(0));
            assert_eq!(
                snapshot.and_then(|s| s.first("a").map(<[u8]>::to_vec)),
                None
            );
        }
    }

    #[test]
    fn every_malformed_copy_is_refused_rather_than_half_read() {
        let good = wire(&[("name", "value"), ("x", "y")]);
        // Every truncation, every byte changed, and one extra byte.
        for end in 0..good.len() {
            if end > 0 {
                assert_eq!(
                    HeaderSnapshot::from_wire(good[..end].to_vec()),
                    None,
                    "{end}"
                );
            }
        }
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(HeaderSnapshot::from_wire(longer), None);
        for at in 0..good.len() {
            let mut changed = good.clone();
            changed[at] = changed[at].wrapping_add(1);
            if let Some(snapshot) = HeaderSnapshot::from_wire(changed.clone()) {
                // Only a change inside a name or value keeps the shape.
                assert_eq!(snapshot.len(), 2, "byte {at}");
                let pairs: Vec<_> = snapshot.pairs().collect();
                assert_eq!(HeaderSnapshot::to_wire(pairs.iter().copied()), changed);
            }
        }
        // A count far beyond the bytes, and lengths that overflow.
        let mut huge = good.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(HeaderSnapshot::from_wire(huge), None);
        let mut overflowing = good;
        overflowing[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(HeaderSnapshot::from_wire(overflowing), None);
    }
}
