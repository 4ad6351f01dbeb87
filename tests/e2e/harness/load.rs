//! A bounded background load: N client threads sending requests in a loop
//! and judging every answer, until stopped, a request cap, or a deadline.
//! Counts what was sent and keeps every failure, for the test to print and
//! assert.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::client::{self, Reply};

/// What one request is and what a good answer looks like.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `Some(why)` when the answer is a failure.
    pub judge: fn(&Reply) -> Option<String>,
}

pub struct Load {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
    workers: Vec<JoinHandle<()>>,
}

/// What the load saw.
pub struct Tally {
    pub sent: u64,
    pub failures: Vec<String>,
}

impl Load {
    /// `threads` clients cycling through `targets`; each stops after
    /// `max_requests` in all, or at `deadline`, whichever comes first.
    pub fn start(
        threads: usize,
        targets: Vec<Target>,
        max_requests: u64,
        within: Duration,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let deadline = Instant::now() + within;
        let workers = (0..threads)
            .map(|n| {
                let (stop, sent, failures, targets) = (
                    stop.clone(),
                    sent.clone(),
                    failures.clone(),
                    targets.clone(),
                );
                thread::spawn(move || {
                    let mut i = n;
                    while !stop.load(Ordering::Relaxed)
                        && Instant::now() < deadline
                        && sent.load(Ordering::Relaxed) < max_requests
                    {
                        let target = &targets[i % targets.len()];
                        i += 1;
                        let headers: Vec<(&str, &str)> = target
                            .headers
                            .iter()
                            .map(|(n, v)| (n.as_str(), v.as_str()))
                            .collect();
                        let problem = match client::try_get(&target.url, &headers) {
                            Err(err) => Some(format!("transport error: {err}")),
                            Ok(reply) => (target.judge)(&reply),
                        };
                        sent.fetch_add(1, Ordering::Relaxed);
                        if let Some(problem) = problem {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{} {:?}: {problem}", target.url, target.headers));
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            sent,
            failures,
            workers,
        }
    }

    pub fn finish(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        for worker in self.workers {
            worker.join().unwrap();
        }
        let failures = std::mem::take(&mut *self.failures.lock().unwrap());
        let sent = self.sent.load(Ordering::Relaxed);
        Tally { sent, failures }
    }
}
