//! What a run has spent against its budget: every task it funded (every
//! attempt of every sub-task), what the escrow paid out of them and what
//! came back. Read from the chain's settlements, never estimated.

use serde::{Deserialize, Serialize};
use tessera_bindings::usdc::Usdc;

/// A run's money, in token base units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    /// Funded into the escrow: the amounts of every task created.
    pub committed: Usdc,
    /// Paid to executors.
    pub paid: Usdc,
    /// Returned to the sponsor (expired, cancelled, refunded or split).
    pub refunded: Usdc,
}

impl Spend {
    /// What the budget carries now: committed, less what came back (paid,
    /// and still locked in the escrow).
    pub fn charged(&self) -> Usdc {
        self.committed.checked_sub(self.refunded).unwrap_or(Usdc::ZERO)
    }

    /// Whether funding `cost` more keeps the charge within `budget`.
    pub fn fits(&self, cost: Usdc, budget: Usdc) -> bool {
        self.charged().checked_add(cost).is_some_and(|total| total <= budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refunds_free_the_budget_and_payments_do_not() {
        let u = Usdc::from_base_units;
        let spend = Spend { committed: u(900), paid: u(300), refunded: u(400) };
        assert_eq!(spend.charged(), u(500), "paid or still locked");
        assert!(spend.fits(u(500), u(1_000)));
        assert!(!spend.fits(u(501), u(1_000)), "one unit over is refused");
        assert!(Spend::default().fits(u(1_000), u(1_000)));
        let odd = Spend { committed: u(1), paid: u(0), refunded: u(5) };
        assert_eq!(odd.charged(), u(0), "more back than in (a hostile log) charges nothing");
        let json = serde_json::to_value(spend).unwrap();
        assert_eq!(json, serde_json::json!({"committed": "900", "paid": "300", "refunded": "400"}));
    }
}
