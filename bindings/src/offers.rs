//! Reading who offers a capability, in bounded pages.
//!
//! The registry lists offers per capability in pages of at most
//! `MAX_PAGE` (200). Anyone can register, so the list can be as long as a
//! stranger likes: [`offers_for`] reads at most `max` offers and says whether
//! it stopped early. Choosing among them is off-chain ([`cheapest_active`]);
//! the escrow checks the choice again at creation (the executor must be
//! active and offer the capability at no more than the task's amount), so a
//! stale or truncated read can cost a revert, never money.

use alloy::{
    primitives::{Address, B256, U256},
    providers::Provider,
};

use crate::{
    AgentRegistry::AgentRegistryInstance,
    IAgentRegistry::OfferView,
    client::{ClientError, map_call},
};

/// The registry's page limit (`AgentRegistry.MAX_PAGE`).
pub const PAGE: u64 = 200;

/// How many offers a service reads for one capability unless told otherwise.
pub const DEFAULT_MAX_OFFERS: usize = 2_000;

/// Offers read for one capability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offers {
    /// The offers read, in the registry's order.
    pub offers: Vec<OfferView>,
    /// How many offers the registry lists in all (at the last page read).
    pub total: u64,
}

impl Offers {
    /// Whether the registry lists more offers than were read.
    pub fn truncated(&self) -> bool {
        (self.offers.len() as u64) < self.total
    }
}

/// Reads up to `max` offers of `capability`, a page of [`PAGE`] at a time.
pub async fn offers_for<P: Provider>(
    registry: &AgentRegistryInstance<P>,
    capability: B256,
    max: usize,
) -> Result<Offers, ClientError> {
    let mut out = Offers::default();
    loop {
        let offset = out.offers.len();
        let want = (max - offset).min(PAGE as usize);
        if want == 0 {
            return Ok(out);
        }
        let page = registry
            .offersFor(capability, U256::from(offset), U256::from(want))
            .call()
            .await
            .map_err(map_call)?;
        out.total = page.total.saturating_to();
        let got = page.page.len();
        out.offers.extend(page.page.into_iter().take(want));
        if got < want || out.offers.len() as u64 >= out.total {
            return Ok(out);
        }
    }
}

/// The cheapest active offer priced at most `max_price` (any price when
/// `None`); ties go to the earliest listed. A zero price is no offer.
pub fn cheapest_active(offers: &[OfferView], max_price: Option<u128>) -> Option<(Address, u128)> {
    offers
        .iter()
        .filter(|o| o.active && o.price > 0 && max_price.is_none_or(|m| o.price <= m))
        .fold(None, |best: Option<&OfferView>, o| match best {
            Some(b) if b.price <= o.price => Some(b),
            _ => Some(o),
        })
        .map(|o| (o.agent, o.price))
}

/// The agents listed for a capability, active or not, in the registry's order.
pub fn agents(offers: &[OfferView]) -> Vec<Address> {
    offers.iter().map(|o| o.agent).collect()
}

#[cfg(test)]
mod tests {
    use alloy::primitives::address;

    use super::*;

    fn offer(agent: Address, price: u128, active: bool) -> OfferView {
        OfferView { agent, price, active }
    }

    const A: Address = address!("0x00000000000000000000000000000000000000a1");
    const B: Address = address!("0x00000000000000000000000000000000000000b2");
    const C: Address = address!("0x00000000000000000000000000000000000000c3");

    #[test]
    fn cheapest_skips_paused_and_over_budget_and_keeps_the_first_of_a_tie() {
        let offers = [offer(A, 5, false), offer(B, 7, true), offer(C, 7, true)];
        assert_eq!(cheapest_active(&offers, None), Some((B, 7)));
        assert_eq!(cheapest_active(&offers, Some(6)), None);
        let offers = [offer(A, 9, true), offer(B, 3, true), offer(C, 0, true)];
        assert_eq!(cheapest_active(&offers, Some(9)), Some((B, 3)));
        assert_eq!(cheapest_active(&[], None), None);
    }

    #[test]
    fn truncation_is_reported() {
        let o = Offers { offers: vec![offer(A, 1, true)], total: 3 };
        assert!(o.truncated());
        let o = Offers { offers: vec![offer(A, 1, true)], total: 1 };
        assert!(!o.truncated());
        assert_eq!(agents(&o.offers), vec![A]);
    }
}
