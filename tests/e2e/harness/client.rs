//! A blocking HTTP client that reports every status (a 504 is an
//! observation here, not an error) and how long the exchange took.

use std::io::Read;
use std::time::{Duration, Instant};

pub struct Reply {
    pub status: u16,
    /// Lower-case names, arrival order, repeats kept.
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub elapsed: Duration,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("body is not JSON ({err}): {}", self.body))
    }

    /// Every value of response header `name`.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// What the backend saw for request header `name` (from its echo):
    /// None when absent, every value when repeated.
    pub fn echoed_header(&self, name: &str) -> Option<Vec<String>> {
        match &self.json()["headers"][name] {
            serde_json::Value::Null => None,
            serde_json::Value::String(value) => Some(vec![value.clone()]),
            serde_json::Value::Array(values) => Some(
                values
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect(),
            ),
            other => panic!("unexpected header echo {other}"),
        }
    }
}

/// Generous enough for every test's slowest expected answer; a hung
/// Envoy fails the test instead of hanging CI.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(CLIENT_TIMEOUT))
        .build()
        .into()
}

pub fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    try_get(url, headers).unwrap_or_else(|err| panic!("GET {url} failed: {err}"))
}

pub fn try_get(url: &str, headers: &[(&str, &str)]) -> Result<Reply, ureq::Error> {
    let mut request = agent().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let started = Instant::now();
    let response = request.call()?;
    read_reply(response, started)
}

/// `POST` with an empty body.
pub fn post(url: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = agent().post(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let started = Instant::now();
    request
        .send_empty()
        .and_then(|response| read_reply(response, started))
        .unwrap_or_else(|err| panic!("POST {url} failed: {err}"))
}

fn read_reply(
    mut response: ureq::http::Response<ureq::Body>,
    started: Instant,
) -> Result<Reply, ureq::Error> {
    let mut body = String::new();
    response
        .body_mut()
        .as_reader()
        .read_to_string(&mut body)
        .map_err(ureq::Error::Io)?;
    let elapsed = started.elapsed();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    Ok(Reply {
        status: response.status().as_u16(),
        headers,
        body,
        elapsed,
    })
}
