//! End-to-end tests over a real anvil chain.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod appeals;
mod blobs;
mod ceremony;
mod chain_time;
mod classify;
mod conditions;
mod decline;
mod delegation;
mod demo;
mod disputes;
mod erc8004;
mod feedback;
mod frontrun;
mod grants;
mod graphql;
mod handler;
mod hints;
mod hosted;
mod hostile;
mod indexer;
mod injection;
mod lifecycle;
mod money;
mod nested;
mod operator;
mod plans;
mod provider;
mod ratings;
mod registry;
mod reorg;
mod select;
mod sender;
mod strategy;
mod supervision;
mod support;
mod sybil;
mod upfront;
mod worker;
