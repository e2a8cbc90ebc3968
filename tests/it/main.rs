//! End-to-end tests over a real anvil chain.

mod demo;
mod lifecycle;
mod registry;
mod worker;
mod plans;
