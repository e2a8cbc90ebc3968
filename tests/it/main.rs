//! End-to-end tests over a real anvil chain.

mod appeals;
mod blobs;
mod ceremony;
mod chain_time;
mod classify;
mod decline;
mod delegation;
mod demo;
mod disputes;
mod erc8004;
mod frontrun;
mod hosted;
mod indexer;
mod injection;
mod lifecycle;
mod money;
mod nested;
mod plans;
mod provider;
mod registry;
mod reorg;
mod select;
mod sender;
mod strategy;
mod supervision;
mod worker;
