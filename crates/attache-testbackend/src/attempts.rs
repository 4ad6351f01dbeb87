//! Per-key attempt counters: how many times the router reached the backend
//! for one logical request, which is what the retry tests assert on.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Thread-safe attempt counters keyed by the `x-backend-key` header value.
#[derive(Debug, Default)]
pub struct AttemptBook {
    counts: Mutex<HashMap<String, u64>>,
}

impl AttemptBook {
    /// Counts one more attempt for `key` and returns its 1-based number.
    pub fn record(&self, key: &str) -> u64 {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(key.to_owned()).or_insert(0);
        *count += 1;
        *count
    }

    /// Attempts seen so far for `key` (0 if never seen).
    pub fn get(&self, key: &str) -> u64 {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.get(key).copied().unwrap_or(0)
    }

    /// Forgets every key, so a long-lived backend (demo, compose) can be reused.
    pub fn reset(&self) {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_count_per_key_from_one() {
        let book = AttemptBook::default();
        assert_eq!(book.record("a"), 1);
        assert_eq!(book.record("a"), 2);
        assert_eq!(book.record("b"), 1);
        assert_eq!(book.get("a"), 2);
        assert_eq!(book.get("b"), 1);
        assert_eq!(book.get("never"), 0);
    }

    #[test]
    fn reset_forgets_every_key() {
        let book = AttemptBook::default();
        book.record("a");
        book.record("b");
        book.reset();
        assert_eq!(book.get("a"), 0);
        assert_eq!(book.record("a"), 1);
    }

    #[test]
    fn concurrent_records_are_not_lost() {
        let book = std::sync::Arc::new(AttemptBook::default());
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let book = book.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        book.record("k");
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(book.get("k"), 800);
    }
}
