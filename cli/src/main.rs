//! `tessera`: the one command line of the project.
// Test targets share the package's dev-dependencies; only builds check them.
#![cfg_attr(test, allow(unused_crate_dependencies))]

mod agents;
mod arbitrate;
mod cli;
mod client;
mod deploying;
mod index;
mod init;
mod local;
mod orchestrate;
mod runs;
mod serving;
mod sponsor;
mod starting;
mod work;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let format = args.log_format();
    let verbose = args.verbosity() > 0;
    cli::init_tracing(args.verbosity(), args.classify_trace(), format);
    // Every service this binary runs records into one recorder, installed
    // once with every part's metric table (so each histogram has its buckets).
    tessera_http::ops::install(&[
        tessera_orchestrator::ops::METRICS,
        tessera_indexer::metrics::METRICS,
        tessera_arbiter::metrics::METRICS,
    ]);
    // The command futures hold whole chain sessions; keep them off the stack.
    match Box::pin(args.run()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match format {
                cli::LogFormat::Text => {
                    eprintln!("{}", one_line(&e));
                    // The detail, asked for: each cause on a line of its own.
                    if verbose {
                        for (depth, cause) in e.chain().enumerate().skip(1) {
                            eprintln!("  {depth}: {cause}");
                        }
                    }
                }
                // A log collector reads stderr: the failure is one more JSON line.
                cli::LogFormat::Json => tracing::error!(error = format!("{e:#}"), "command failed"),
            }
            ExitCode::from(client::exit_code(&e))
        }
    }
}

/// The failure as one line, `error: <what>: <why>: ...` (the chain of
/// causes joined by ": ", a cause whose text is already said left out;
/// `-v` lists them below it, one a line);
/// with `RUST_BACKTRACE` set (not `0`), eyre's full report with its
/// backtrace instead.
fn one_line(e: &eyre::Report) -> String {
    if std::env::var("RUST_BACKTRACE").is_ok_and(|v| v != "0") {
        return format!("Error: {e:?}");
    }
    let mut line = String::from("error");
    for cause in e.chain() {
        let text = cause.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}
