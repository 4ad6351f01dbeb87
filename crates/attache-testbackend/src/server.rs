//! The HTTP loop: one thread per request, so delayed answers never hold up
//! others (the hot-reload test keeps hundreds in flight).

use std::io::Cursor;
use std::sync::Arc;
use std::thread;

use serde_json::json;
use tiny_http::{Header, Request, Response, Server};

use crate::attempts::AttemptBook;
use crate::echo::echo_body;
use crate::plan::Plan;

const ATTEMPTS_PREFIX: &str = "/__attempts/";
const RESET_PATH: &str = "/__reset";

/// Serves until the process ends.
pub fn serve(server: Server) {
    let book = Arc::new(AttemptBook::default());
    for request in server.incoming_requests() {
        let book = Arc::clone(&book);
        let spawned = thread::Builder::new()
            .name("request".to_owned())
            .spawn(move || handle(request, &book));
        if let Err(err) = spawned {
            eprintln!("attache-testbackend: cannot start a request thread: {err}");
        }
    }
}

fn handle(request: Request, book: &AttemptBook) {
    let url = request.url().to_owned();
    let path = url.split_once('?').map_or(url.as_str(), |(path, _)| path);
    let answer = if let Some(key) = path.strip_prefix(ATTEMPTS_PREFIX) {
        json_response(200, &json!({"key": key, "attempts": book.get(key)}))
    } else if path == RESET_PATH && request.method().as_str() == "POST" {
        book.reset();
        json_response(200, &json!({"reset": true}))
    } else {
        echo(&request, &url, book)
    };
    if let Err(err) = request.respond(answer) {
        // The client (Envoy, after a timeout) may have gone away; that is
        // exactly what timeout tests provoke, so it is not an error here.
        eprintln!("attache-testbackend: response not delivered: {err}");
    }
}

fn echo(request: &Request, url: &str, book: &AttemptBook) -> Response<Cursor<Vec<u8>>> {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.as_str().to_owned(),
            )
        })
        .collect();
    let pairs = || headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let plan = match Plan::from_headers(pairs()) {
        Ok(plan) => plan,
        Err(err) => return json_response(400, &json!({"error": err.to_string()})),
    };
    let attempt = book.record(plan.key.as_deref().unwrap_or(""));
    let outcome = plan.outcome(attempt);
    if let Some(delay) = outcome.delay {
        thread::sleep(delay);
    }
    let body = echo_body(
        request.method().as_str(),
        url,
        pairs(),
        attempt,
        plan.key.as_deref(),
    );
    let mut response = json_response(outcome.status, &body);
    add_header(&mut response, "x-backend-attempt", &attempt.to_string());
    for (name, value) in &plan.respond_headers {
        add_header(&mut response, name, value);
    }
    response
}

fn json_response(status: u16, body: &serde_json::Value) -> Response<Cursor<Vec<u8>>> {
    let mut response = Response::from_data(body.to_string().into_bytes()).with_status_code(status);
    add_header(&mut response, "content-type", "application/json");
    response
}

/// Adds a header, or says on stderr why it could not (a test asked for a
/// header name or value that HTTP cannot carry).
fn add_header(response: &mut Response<Cursor<Vec<u8>>>, name: &str, value: &str) {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(header) => response.add_header(header),
        Err(()) => eprintln!("attache-testbackend: header {name:?}: {value:?} cannot be sent"),
    }
}
