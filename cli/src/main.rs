//! `tessera`: the one command line of the project.

mod arbitrate;
mod cli;
mod index;
mod orchestrate;

use clap::Parser;

#[tokio::main]
async fn main() -> eyre::Result<()> {
    let args = cli::Cli::parse();
    cli::init_tracing(args.verbosity(), args.classify_trace());
    // The command futures hold whole chain sessions; keep them off the stack.
    Box::pin(args.run()).await
}
