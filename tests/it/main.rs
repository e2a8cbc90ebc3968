//! End-to-end tests over a real anvil chain.

mod demo;
mod lifecycle;
mod plans;
mod registry;
mod worker;
