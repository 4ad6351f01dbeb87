//! Just enough HTTP/1.1 for a test upstream: read a request head (parsed by
//! `httparse`), skip a Content-Length body, write a response with a length.
//!
//! Why not a server crate: the backend must answer every connection Envoy
//! opens at once and keeps alive; tiny_http's worker pool left a freshly
//! accepted connection queued behind long-lived keep-alive ones (a request
//! hung 30 s in the hot-reload load test). One thread per connection cannot
//! starve.

use std::io::{self, BufRead, Read, Write};

/// Request heads larger than this are refused (tests send small ones).
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;

pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// `(lower-case name, value)` in arrival order.
    pub headers: Vec<(String, String)>,
    /// The client asked to close after this exchange.
    pub close: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("malformed request head: {0}")]
    Parse(String),
    #[error("request head exceeds {MAX_HEAD_BYTES} bytes")]
    TooLarge,
    #[error("chunked request bodies are not supported")]
    Chunked,
}

/// Reads the next request on the connection; `Ok(None)` when the client
/// closed it between requests.
pub fn read_request(reader: &mut impl BufRead) -> Result<Option<Request>, HttpError> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        if reader.read_until(b'\n', &mut head)? == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(HttpError::Parse(
                    "connection closed inside the head".to_owned(),
                ))
            };
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(HttpError::TooLarge);
        }
        let line = &head[before..];
        // Tolerate empty lines before the request line (RFC 9112 2.2).
        if before == 0 && (line == b"\r\n" || line == b"\n") {
            head.clear();
            continue;
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut slots);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(HttpError::Parse("incomplete head".to_owned()))
        }
        Err(err) => return Err(HttpError::Parse(err.to_string())),
    }
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    if value("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        return Err(HttpError::Chunked);
    }
    let length: u64 = value("content-length")
        .map(|v| v.trim().parse())
        .transpose()
        .map_err(|_| HttpError::Parse("content-length is not a number".to_owned()))?
        .unwrap_or(0);
    io::copy(&mut reader.take(length), &mut io::sink())?;
    let http10 = parsed.version == Some(0);
    let connection = value("connection").unwrap_or_default();
    let close = connection.contains("close") || (http10 && !connection.contains("keep-alive"));
    Ok(Some(Request {
        method: parsed.method.unwrap_or("GET").to_owned(),
        target: parsed.path.unwrap_or("/").to_owned(),
        headers,
        close,
    }))
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Writes `response`, with Content-Length and, when closing, Connection: close.
pub fn write_response(writer: &mut impl Write, response: &Response, close: bool) -> io::Result<()> {
    let mut out = Vec::with_capacity(256 + response.body.len());
    write!(
        out,
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    )?;
    for (name, value) in &response.headers {
        write!(out, "{name}: {value}\r\n")?;
    }
    write!(out, "content-length: {}\r\n", response.body.len())?;
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&response.body);
    writer.write_all(&out)?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// A header name is an HTTP token; a value has no control characters.
pub fn valid_header(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && value
            .bytes()
            .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read(text: &str) -> Result<Option<Request>, HttpError> {
        read_request(&mut Cursor::new(text.as_bytes().to_vec()))
    }

    #[test]
    fn reads_consecutive_requests_and_skips_bodies() {
        let mut conn = Cursor::new(
            b"POST /a?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhelloGET /b HTTP/1.1\r\nconnection: close\r\n\r\n"
                .to_vec(),
        );
        let first = read_request(&mut conn).unwrap().unwrap();
        assert_eq!(first.method, "POST");
        assert_eq!(first.target, "/a?x=1");
        assert!(first.headers.contains(&("x-a".to_owned(), "1".to_owned())));
        assert!(!first.close);
        let second = read_request(&mut conn).unwrap().unwrap();
        assert_eq!(second.target, "/b");
        assert!(second.close);
        assert!(read_request(&mut conn).unwrap().is_none());
    }

    #[test]
    fn http10_closes_unless_keep_alive() {
        assert!(read("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap().close);
        assert!(
            !read("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                .unwrap()
                .unwrap()
                .close
        );
    }

    #[test]
    fn malformed_and_chunked_requests_are_errors() {
        assert!(matches!(read("NOT HTTP\r\n\r\n"), Err(HttpError::Parse(_))));
        assert!(matches!(
            read("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(HttpError::Chunked)
        ));
        assert!(matches!(
            read("GET / HTTP/1.1\r\nHost"),
            Err(HttpError::Parse(_))
        ));
    }

    #[test]
    fn responses_carry_length_and_close() {
        let mut out = Vec::new();
        let response = Response {
            status: 503,
            headers: vec![("x-a".to_owned(), "1".to_owned())],
            body: b"{}".to_vec(),
        };
        write_response(&mut out, &response, true).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 503 Service Unavailable\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
        );
    }

    #[test]
    fn header_validity() {
        assert!(valid_header("x-internal", "secret value"));
        assert!(!valid_header("bad name", "v"));
        assert!(!valid_header("x", "line\r\nbreak"));
        assert!(!valid_header("", "v"));
    }
}
