//! The outside facts a plan is checked against: known capabilities,
//! executors' registration and prices.

use std::collections::{HashMap, HashSet};

use alloy::primitives::Address;
use tessera_bindings::usdc::Usdc;

/// What executors look like to the plan validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorStatus {
    /// Registered and taking work.
    Active,
    /// Registered but not taking work.
    Paused,
    /// Not in the registry.
    Unknown,
}

/// The outside facts a plan is checked against; the chain-backed
/// implementation answers from the agent registry.
pub trait PlanContext {
    /// Whether some registered agent offers `capability`.
    fn is_known_capability(&self, capability: &str) -> bool;
    /// Registration status of `executor`.
    fn executor_status(&self, executor: Address) -> ExecutorStatus;
    /// The price `executor` asks for `capability`, when the context knows
    /// prices; `Some(None)` when it knows the executor does not offer it.
    fn executor_price(&self, _executor: Address, _capability: &str) -> Option<Option<Usdc>> {
        None
    }
}

/// A [`PlanContext`] held in memory, for tests and the offline planner.
#[derive(Debug, Clone, Default)]
pub struct InMemoryContext {
    capabilities: HashSet<String>,
    executors: HashMap<Address, ExecutorStatus>,
    prices: Option<HashMap<(Address, String), Usdc>>,
}

impl InMemoryContext {
    /// An empty context: no capabilities, no executors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a known capability.
    pub fn with_capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.insert(capability.into());
        self
    }

    /// Records an executor's status.
    pub fn with_executor(mut self, executor: Address, status: ExecutorStatus) -> Self {
        self.executors.insert(executor, status);
        self
    }

    /// Records an offer; once any offer is recorded, executors are checked
    /// against their offers (capability offered, price within cost).
    pub fn with_offer(mut self, executor: Address, capability: &str, price: Usdc) -> Self {
        self.capabilities.insert(capability.to_owned());
        self.prices
            .get_or_insert_with(HashMap::new)
            .insert((executor, capability.to_owned()), price);
        self
    }
}

impl PlanContext for InMemoryContext {
    fn is_known_capability(&self, capability: &str) -> bool {
        self.capabilities.contains(capability)
    }

    fn executor_status(&self, executor: Address) -> ExecutorStatus {
        self.executors.get(&executor).copied().unwrap_or(ExecutorStatus::Unknown)
    }

    fn executor_price(&self, executor: Address, capability: &str) -> Option<Option<Usdc>> {
        let prices = self.prices.as_ref()?;
        Some(prices.get(&(executor, capability.to_owned())).copied())
    }
}
