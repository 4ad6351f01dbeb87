//! `attache-testbackend`: the upstream of the end-to-end tests and the demo.
//!
//! Echoes every request as JSON, fails or delays on request (`x-backend-*`
//! headers, see `plan`), and counts attempts per key so a test can assert
//! how many times Envoy's router tried.

#![forbid(unsafe_code)]

mod attempts;
mod echo;
mod http;
mod plan;
mod server;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "attache-testbackend",
    version,
    about = "HTTP test backend for Attaché's end-to-end tests"
)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let listener = match std::net::TcpListener::bind(args.listen) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!(
                "attache-testbackend: cannot listen on {}: {err}",
                args.listen
            );
            return ExitCode::from(1);
        }
    };
    let bound = match listener.local_addr() {
        Ok(addr) => addr,
        Err(err) => {
            eprintln!("attache-testbackend: no local address: {err}");
            return ExitCode::from(1);
        }
    };
    // The first stdout line is the contract with the harness (it learns the
    // ephemeral port from it), so flush it at once.
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "listening on {bound}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        eprintln!("attache-testbackend: listening on {bound} (stdout closed)");
    }
    server::serve(listener);
    ExitCode::SUCCESS
}
