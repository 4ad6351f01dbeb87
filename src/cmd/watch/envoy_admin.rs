//! Envoy's admin interface, asked whether it applied a file before the next
//! one is written (docs/envoy.md, "Order of the writes").
//!
//! Every file-based subscription publishes the `version_info` of the last
//! file it accepted as the text stat `<prefix>.version_text`, and counts
//! files it refused in `update_rejected` (Envoy refused the content) and
//! `update_failure` (it could not read or parse it). A cluster or listener
//! that is accepted may still be warming: the gauges
//! `cluster_manager.warming_clusters` and
//! `listener_manager.total_listeners_warming` say when that is over.

use std::io::Read;
use std::time::{Duration, Instant};

/// Whose progress to ask about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// The filter's ECDS file.
    Ecds,
    Clusters,
    /// The RDS file of this listener (also its stat prefix).
    Routes(String),
    Listeners,
}

impl Subscription {
    fn prefix(&self) -> String {
        match self {
            Subscription::Ecds => "extension_config_discovery.http_filter.attache.".into(),
            Subscription::Clusters => "cluster_manager.cds.".into(),
            Subscription::Routes(name) => format!("http.{name}.rds.{name}."),
            Subscription::Listeners => "listener_manager.lds.".into(),
        }
    }

    fn warming_gauge(&self) -> Option<&'static str> {
        match self {
            Subscription::Clusters => Some("cluster_manager.warming_clusters"),
            Subscription::Listeners => Some("listener_manager.total_listeners_warming"),
            _ => None,
        }
    }
}

/// What Envoy says about one subscription.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    version: Option<String>,
    /// `update_rejected` + `update_failure`.
    refused: u64,
    warming: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The file's version is live (and nothing is warming).
    Applied,
    /// Envoy refused the file and keeps what it had.
    Refused,
    /// Envoy answered, but neither applied nor refused the file in time.
    NotConfirmed,
    /// Nothing listens on the admin port: Envoy is not running, and reads
    /// every file when it starts, so there is nothing to wait for.
    EnvoyDown,
    /// The admin port did not answer sensibly.
    NoAnswer(String),
}

/// How long to wait for one file; a 10,000-route table takes seconds to
/// build on a busy machine.
const APPLY_WITHIN: Duration = Duration::from_secs(30);
const POLL_EVERY: Duration = Duration::from_millis(20);

pub struct Admin {
    base: String,
    agent: ureq::Agent,
}

impl Admin {
    /// `address`: HOST:PORT of Envoy's admin interface.
    pub fn new(address: &str) -> Admin {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        Admin {
            base: format!("http://{}", address.trim_start_matches("http://")),
            agent,
        }
    }

    /// HOST:PORT as given, for messages.
    pub fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// Where `subscription` stands now; `Err(outcome)` when Envoy cannot say.
    pub fn progress(&self, subscription: &Subscription) -> Result<Progress, Outcome> {
        let prefix = subscription.prefix();
        let mut pattern = format!(
            "^{}(version_text|update_rejected|update_failure)$",
            escape(&prefix)
        );
        if let Some(gauge) = subscription.warming_gauge() {
            pattern.push_str(&format!("|^{}$", escape(gauge)));
        }
        let body = self.get(&format!("/stats?filter={}", percent_encode(&pattern)))?;
        let mut progress = Progress::default();
        for line in body.lines() {
            let Some((name, value)) = line.split_once(": ") else {
                continue;
            };
            let number = value.trim().parse::<u64>().unwrap_or(0);
            match name.strip_prefix(prefix.as_str()) {
                Some("version_text") => {
                    progress.version = Some(value.trim().trim_matches('"').to_string())
                }
                Some("update_rejected" | "update_failure") => progress.refused += number,
                _ if Some(name) == subscription.warming_gauge() => progress.warming = number,
                _ => {}
            }
        }
        Ok(progress)
    }

    /// Waits until `subscription` shows `version` (nothing warming), or
    /// refused a file since `before`.
    pub fn await_applied(
        &self,
        subscription: &Subscription,
        version: &str,
        before: &Progress,
    ) -> Outcome {
        let started = Instant::now();
        loop {
            match self.progress(subscription) {
                Ok(now) if now.version.as_deref() == Some(version) && now.warming == 0 => {
                    return Outcome::Applied
                }
                Ok(now) if now.refused > before.refused => return Outcome::Refused,
                Ok(_) if started.elapsed() > APPLY_WITHIN => return Outcome::NotConfirmed,
                Ok(_) => std::thread::sleep(POLL_EVERY),
                Err(outcome) => return outcome,
            }
        }
    }

    fn get(&self, path: &str) -> Result<String, Outcome> {
        let url = format!("{}{path}", self.base);
        let mut response = self.agent.get(&url).call().map_err(|err| match &err {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                Outcome::EnvoyDown
            }
            _ => Outcome::NoAnswer(format!("GET {url}: {err}")),
        })?;
        if response.status() != 200 {
            return Err(Outcome::NoAnswer(format!(
                "GET {url}: status {}",
                response.status()
            )));
        }
        let mut body = String::new();
        response
            .body_mut()
            .as_reader()
            .read_to_string(&mut body)
            .map_err(|err| Outcome::NoAnswer(format!("GET {url}: {err}")))?;
        Ok(body)
    }
}

/// Regex-escapes a stat name (listener names may hold `+`).
fn escape(name: &str) -> String {
    name.chars()
        .flat_map(|c| {
            (c.is_ascii_punctuation() && c != '_')
                .then_some('\\')
                .into_iter()
                .chain([c])
        })
        .collect()
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_patterns_are_encoded_for_a_query_string() {
        assert_eq!(
            percent_encode(&format!("^{}$", escape("a.b_c"))),
            "%5Ea%5C.b_c%24"
        );
        assert_eq!(
            Subscription::Routes("http+admin".into()).prefix(),
            "http.http+admin.rds.http+admin."
        );
    }

    #[test]
    fn an_admin_port_nobody_listens_on_means_envoy_is_down() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        // The listener is dropped: nothing listens there now.
        let admin = Admin::new(&format!("127.0.0.1:{port}"));
        assert_eq!(
            admin.progress(&Subscription::Clusters),
            Err(Outcome::EnvoyDown)
        );
    }
}
