//! The accept loop: one thread per connection and answers in arrival order
//! on it, so a delayed answer holds up only its own connection (the
//! hot-reload test keeps hundreds of requests in flight).

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;

use serde_json::json;

use crate::attempts::AttemptBook;
use crate::echo::echo_body;
use crate::http::{self, HttpError, Request, Response};
use crate::plan::Plan;

const ATTEMPTS_PREFIX: &str = "/__attempts/";
const RESET_PATH: &str = "/__reset";

/// Serves until the process ends.
pub fn serve(listener: TcpListener) {
    let book = Arc::new(AttemptBook::default());
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(err) => {
                eprintln!("attache-testbackend: accept failed: {err}");
                continue;
            }
        };
        let book = Arc::clone(&book);
        let spawned = thread::Builder::new()
            .name("connection".to_owned())
            .spawn(move || connection(stream, &book));
        if let Err(err) = spawned {
            eprintln!("attache-testbackend: cannot start a connection thread: {err}");
        }
    }
}

fn connection(stream: TcpStream, book: &AttemptBook) {
    if let Err(err) = exchange_all(stream, book) {
        // Envoy closing a connection after a timeout is what timeout tests
        // provoke; note it for whoever reads the log, nothing more.
        eprintln!("attache-testbackend: {err}");
    }
}

fn exchange_all(stream: TcpStream, book: &AttemptBook) -> Result<(), HttpError> {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let request = match http::read_request(&mut reader) {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(HttpError::Io(err)) => return Err(HttpError::Io(err)),
            Err(err) => {
                let body = json!({"error": err.to_string()});
                http::write_response(&mut writer, &json_response(400, &body), true)?;
                return Err(err);
            }
        };
        let Some(response) = answer(&request, book) else {
            // x-backend-reset-times: read the request, close without a word.
            return Ok(());
        };
        http::write_response(&mut writer, &response, request.close)?;
        if request.close {
            return Ok(());
        }
    }
}

/// The response, or None to close the connection without one.
fn answer(request: &Request, book: &AttemptBook) -> Option<Response> {
    let path = request
        .target
        .split_once('?')
        .map_or(request.target.as_str(), |(path, _)| path);
    if let Some(key) = path.strip_prefix(ATTEMPTS_PREFIX) {
        Some(json_response(
            200,
            &json!({"key": key, "attempts": book.get(key)}),
        ))
    } else if path == RESET_PATH && request.method == "POST" {
        book.reset();
        Some(json_response(200, &json!({"reset": true})))
    } else {
        echo(request, book)
    }
}

fn echo(request: &Request, book: &AttemptBook) -> Option<Response> {
    let pairs = || {
        request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
    };
    let plan = match Plan::from_headers(pairs()) {
        Ok(plan) => plan,
        Err(err) => return Some(json_response(400, &json!({"error": err.to_string()}))),
    };
    let attempt = book.record(plan.key.as_deref().unwrap_or(""));
    let outcome = plan.outcome(attempt);
    if outcome.reset {
        return None;
    }
    if let Some(delay) = outcome.delay {
        thread::sleep(delay);
    }
    let body = echo_body(
        &request.method,
        &request.target,
        pairs(),
        attempt,
        plan.key.as_deref(),
    );
    let mut response = json_response(outcome.status, &body);
    response
        .headers
        .push(("x-backend-attempt".to_owned(), attempt.to_string()));
    response.headers.extend(plan.respond_headers);
    Some(response)
}

fn json_response(status: u16, body: &serde_json::Value) -> Response {
    Response {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.to_string().into_bytes(),
    }
}
