//! `tessera`: the one command line of the project.

mod arbitrate;
mod cli;
mod client;
mod index;
mod orchestrate;
mod runs;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_tracing(args.verbosity(), args.classify_trace());
    // The command futures hold whole chain sessions; keep them off the stack.
    match Box::pin(args.run()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:?}");
            ExitCode::from(client::exit_code(&e))
        }
    }
}
