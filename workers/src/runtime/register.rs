//! Registration: the card brought into the AgentRegistry — capabilities
//! and prices, capabilities the card dropped withdrawn, and the published
//! card (instructions left out unless it asks) as the metadata URI.

use alloy::{primitives::B256, providers::DynProvider};
use tessera_bindings::{AgentRegistry, capability, client::map_call};

use super::{Registration, RuntimeError, Worker, confirm};

impl Worker {
    /// Registers the card, or brings an existing registration in line with it
    /// (new capabilities added, prices and card URI updated, capabilities the
    /// card no longer lists withdrawn: before the additions while one listed
    /// capability stays, after them otherwise, so the agent never offers
    /// nothing). Idempotent: a second call sends nothing. A
    /// paused agent stays paused. The metadata URI is the published card
    /// ([`tessera_bindings::card::AgentCard::published`]: instructions left
    /// out unless the card asks).
    pub async fn ensure_registered(&self) -> Result<Registration, RuntimeError> {
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let current = registry.getAgent(self.me).call().await.map_err(map_call)?;
        let offers: Vec<(B256, u128)> = self
            .card
            .capabilities
            .iter()
            .map(|c| {
                let word = capability::encode(&c.name).expect("card names are validated");
                (word, c.price.base_units())
            })
            .collect();
        let uri = self.card.to_data_uri();
        if current.status == 0 {
            let (caps, prices): (Vec<_>, Vec<_>) = offers.into_iter().unzip();
            confirm(registry.register(uri, caps, prices).from(self.me).send().await).await?;
            tracing::info!(agent = %self.me, id = %self.card.id, "registered");
            return Ok(Registration::Registered);
        }
        let mut changes = 0;
        let mut dropped: Vec<B256> = current
            .capabilities
            .iter()
            .filter(|c| !offers.iter().any(|(word, _)| word == *c))
            .copied()
            .collect();
        // Withdrawn first (room under the registry's cap for the additions)
        // while one stays listed; after the additions otherwise, as the
        // registry never lets an agent offer nothing.
        if dropped.len() < current.capabilities.len() {
            changes += self.withdraw(&registry, std::mem::take(&mut dropped)).await?;
        }
        for (word, price) in offers {
            match current.capabilities.iter().position(|c| *c == word) {
                None => {
                    confirm(registry.addCapability(word, price).from(self.me).send().await).await?;
                    changes += 1;
                }
                Some(i) if current.prices[i] != price => {
                    confirm(registry.updatePrice(word, price).from(self.me).send().await).await?;
                    changes += 1;
                }
                Some(_) => {}
            }
        }
        changes += self.withdraw(&registry, dropped).await?;
        if current.metadataURI != uri {
            confirm(registry.setMetadataURI(uri).from(self.me).send().await).await?;
            changes += 1;
        }
        Ok(Registration::Updated(changes))
    }

    /// Withdraws `capabilities` from the registry; how many were.
    async fn withdraw(
        &self,
        registry: &AgentRegistry::AgentRegistryInstance<&DynProvider>,
        capabilities: Vec<B256>,
    ) -> Result<usize, RuntimeError> {
        for &word in &capabilities {
            confirm(registry.removeCapability(word).from(self.me).send().await).await?;
            let name = capability::decode(word).unwrap_or_else(|| word.to_string());
            tracing::info!(agent = %self.me, capability = %name, "withdrawn: no longer on the card");
        }
        Ok(capabilities.len())
    }
}
