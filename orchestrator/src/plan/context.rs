//! The outside facts a plan is checked against: known capabilities,
//! executors' registration and prices, and the result schemas the
//! capabilities publish (the catalogue).

use std::collections::{HashMap, HashSet};

use alloy::primitives::Address;
use tessera_bindings::{catalogue::Catalogue, describe::ResultSchema, usdc::Usdc};

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

/// What a context knows of the result a sub-task will deliver: what the
/// fields its conditions read are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultShape<'a> {
    /// The context holds no catalogue: fields are not checked.
    Unchecked,
    /// The schema that holds for the sub-task's result.
    Schema {
        /// The schema.
        schema: &'a ResultSchema,
        /// Its executor publishes this one, unlike the capability's.
        executors_own: bool,
    },
    /// The capability (or the executor's own offer of it) publishes no
    /// result schema.
    Unpublished {
        /// It is the executor's own offer that publishes none.
        executors_own: bool,
    },
    /// The capability is not in the catalogue.
    NotListed,
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
    /// The shape of the result `capability` delivers when `executor` (or,
    /// without one, any offerer) runs it; [`ResultShape::Unchecked`] when
    /// the context knows no catalogue.
    fn result_shape(&self, _capability: &str, _executor: Option<Address>) -> ResultShape<'_> {
        ResultShape::Unchecked
    }
}

/// A [`PlanContext`] held in memory, for tests and the offline planner.
#[derive(Debug, Clone, Default)]
pub struct InMemoryContext {
    capabilities: HashSet<String>,
    executors: HashMap<Address, ExecutorStatus>,
    prices: Option<HashMap<(Address, String), Usdc>>,
    catalogue: Option<Catalogue>,
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

impl InMemoryContext {
    /// Checks the fields conditions read against `catalogue`'s result
    /// schemas (see [`PlanContext::result_shape`]).
    pub fn with_catalogue(mut self, catalogue: Catalogue) -> Self {
        self.catalogue = Some(catalogue);
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

    fn result_shape(&self, capability: &str, executor: Option<Address>) -> ResultShape<'_> {
        let Some(catalogue) = &self.catalogue else { return ResultShape::Unchecked };
        let Some(entry) = catalogue.get(capability) else { return ResultShape::NotListed };
        let executor = executor.map(|a| a.to_string());
        let executors_own = executor.as_deref().is_some_and(|a| {
            entry.offerers.iter().any(|o| o.agent.eq_ignore_ascii_case(a) && o.describe.is_some())
        });
        match entry.schema_for(executor.as_deref()) {
            Some(schema) => ResultShape::Schema { schema, executors_own },
            None => ResultShape::Unpublished { executors_own },
        }
    }
}
