//! `tessera`: the one command line of the project.

mod arbitrate;
mod cli;
mod client;
mod deploying;
mod index;
mod orchestrate;
mod runs;
mod serving;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let format = args.log_format();
    cli::init_tracing(args.verbosity(), args.classify_trace(), format);
    // The command futures hold whole chain sessions; keep them off the stack.
    match Box::pin(args.run()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match format {
                cli::LogFormat::Text => eprintln!("Error: {e:?}"),
                // A log collector reads stderr: the failure is one more JSON line.
                cli::LogFormat::Json => tracing::error!(error = format!("{e:#}"), "command failed"),
            }
            ExitCode::from(client::exit_code(&e))
        }
    }
}
