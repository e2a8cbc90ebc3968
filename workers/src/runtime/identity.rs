//! The worker's ERC-8004 identity: an agent in the deployment's identity
//! registry owned by the worker's address, whose URI is the registration file
//! made from its card (name, description, where to reach it, the
//! `reputation` trust model, the identity itself), whose agent wallet is the
//! worker's address (proven with an EIP-712 signature when it is not already),
//! and which the worker's AgentRegistry offer links.

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
    rpc::types::{Filter, TransactionReceipt},
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use tessera_bindings::{
    AgentRegistry, IdentityRegistry,
    client::{ClientError, map_call},
    erc8004::{
        PROOF_VALIDITY_SECS, RegistrationFile, RegistrationRef, Service, TRUST_REPUTATION,
        agent_registry_id, sign_wallet_proof,
    },
    logs::{LogRange, read_all},
};

use super::{RuntimeError, Worker};

/// The service name under which a registration file points at the
/// AgentRegistry holding the agent's offers (keyed by its wallet).
pub const OFFERS_SERVICE: &str = "tessera-offers";
/// The service name of the agent's wallet (`eip155:{chainId}:{address}`).
pub const WALLET_SERVICE: &str = "agentWallet";
/// The service name of the URL the worker serves its blobs at.
pub const BLOBS_SERVICE: &str = "blobs";

/// The worker's ERC-8004 identity after [`Worker::ensure_identity`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Its agent id.
    pub agent_id: U256,
    /// Whether it was registered by this call (else found: linked in the
    /// AgentRegistry, or registered to the worker's address earlier).
    pub registered: bool,
    /// Transactions sent: registration, URI, wallet proof, link.
    pub changes: usize,
}

type IdentityInstance<'a> = IdentityRegistry::IdentityRegistryInstance<&'a DynProvider>;

impl Worker {
    /// Brings the worker's ERC-8004 identity in line with its card, after
    /// [`Worker::ensure_registered`]: finds it (the identity its offer links,
    /// else the newest registered to its address that it still owns) or
    /// registers one, sets the registration file as its URI, proves the
    /// worker's address as its agent wallet with `wallet`'s signature unless
    /// it already is, and links it in the AgentRegistry. Idempotent: a second
    /// call sends nothing. `None` when the deployment names no identity
    /// registry. `wallet` must be the worker's own key.
    pub async fn ensure_identity(
        &self,
        wallet: &PrivateKeySigner,
    ) -> Result<Option<Identity>, RuntimeError> {
        let Some(identity_at) = self.deployment.identity_registry else { return Ok(None) };
        if wallet.address() != self.me {
            return Err(RuntimeError::WalletKey { key: wallet.address(), worker: self.me });
        }
        let registry = AgentRegistry::new(self.deployment.agent_registry, &self.provider);
        let identity = IdentityRegistry::new(identity_at, &self.provider);
        let linked = registry.identityOf(self.me).call().await.map_err(map_call)?;
        let linked = linked.linked.then_some(linked.agentId);

        let mut changes = 0;
        let found = match linked {
            Some(id) if self.owns(&identity, id).await? => Some(id),
            _ => self.find_registered(&identity).await?,
        };
        let (agent_id, registered) = match found {
            Some(id) => (id, false),
            None => {
                let receipt = send(identity.register_0().from(self.me).send().await).await?;
                changes += 1;
                (registered_id(&receipt, self.me)?, true)
            }
        };

        let uri = self.registration_file(agent_id, identity_at)?.to_data_uri();
        if identity.tokenURI(agent_id).call().await.map_err(map_call)? != uri {
            send(identity.setAgentURI(agent_id, uri).from(self.me).send().await).await?;
            changes += 1;
        }
        if identity.getAgentWallet(agent_id).call().await.map_err(map_call)? != self.me {
            self.prove_wallet(&identity, agent_id, wallet).await?;
            changes += 1;
        }
        if linked != Some(agent_id) {
            send(registry.linkIdentity(agent_id).from(self.me).send().await).await?;
            changes += 1;
        }
        tracing::info!(agent = %self.me, %agent_id, registered, changes, "ERC-8004 identity ready");
        Ok(Some(Identity { agent_id, registered, changes }))
    }

    /// The registration file of `agent_id` in `identity_registry`: the card's
    /// id and description, the AgentRegistry holding its offers, its wallet,
    /// where it serves blobs (when it publishes a URL), the `reputation`
    /// trust model and the identity itself.
    pub fn registration_file(
        &self,
        agent_id: U256,
        identity_registry: Address,
    ) -> Result<RegistrationFile, RuntimeError> {
        let chain = self.deployment.chain_id;
        let card = self.card.model();
        let mut file = RegistrationFile::new(card.id.clone(), card.description.clone());
        file.services.push(Service {
            name: OFFERS_SERVICE.into(),
            endpoint: agent_registry_id(chain, self.deployment.agent_registry),
            version: None,
        });
        file.services.push(Service {
            name: WALLET_SERVICE.into(),
            endpoint: agent_registry_id(chain, self.me),
            version: None,
        });
        if let Some(url) = self.sources.public_url() {
            file.services.push(Service {
                name: BLOBS_SERVICE.into(),
                endpoint: url.to_string(),
                version: None,
            });
        }
        file.supported_trust.push(TRUST_REPUTATION.into());
        // What it offers, described as its card publishes it.
        file.capabilities = card.capabilities.clone();
        let id = u64::try_from(agent_id).map_err(|_| RuntimeError::AgentIdRange(agent_id))?;
        file.registrations
            .push(RegistrationRef { agent_id: id, agent_registry: (chain, identity_registry) });
        Ok(file)
    }

    /// Whether the worker owns `agent_id` (false for an unknown id).
    async fn owns(
        &self,
        identity: &IdentityInstance<'_>,
        agent_id: U256,
    ) -> Result<bool, RuntimeError> {
        match identity.ownerOf(agent_id).call().await {
            Ok(owner) => Ok(owner == self.me),
            // A revert: no such agent.
            Err(e) if e.as_revert_data().is_some() => Ok(false),
            Err(e) => Err(map_call(e).into()),
        }
    }

    /// The newest agent registered to the worker's address since the
    /// deployment's first block that it still owns.
    async fn find_registered(
        &self,
        identity: &IdentityInstance<'_>,
    ) -> Result<Option<U256>, RuntimeError> {
        let filter = Filter::new()
            .address(*identity.address())
            .event_signature(IdentityRegistry::Registered::SIGNATURE_HASH)
            .topic2(self.me.into_word());
        let head = self.provider.get_block_number().await?;
        let logs = read_all(
            &self.provider,
            &filter,
            self.deployment.deploy_block,
            head,
            &mut LogRange::default(),
        )
        .await?;
        for log in logs.iter().rev() {
            let Ok(ev) = IdentityRegistry::Registered::decode_log(&log.inner) else { continue };
            if self.owns(identity, ev.data.agentId).await? {
                return Ok(Some(ev.data.agentId));
            }
        }
        Ok(None)
    }

    /// Proves the worker's address as `agent_id`'s wallet: signs the EIP-712
    /// proof for the wallet's current nonce (valid [`PROOF_VALIDITY_SECS`]
    /// from the head's time) and sends it.
    async fn prove_wallet(
        &self,
        identity: &IdentityInstance<'_>,
        agent_id: U256,
        wallet: &PrivateKeySigner,
    ) -> Result<(), RuntimeError> {
        let now = self.chain_time().await?;
        let deadline = U256::from(now + PROOF_VALIDITY_SECS);
        let nonce = identity.walletNonce(self.me).call().await.map_err(map_call)?;
        let chain = self.deployment.chain_id;
        let at = *identity.address();
        let sig = sign_wallet_proof(wallet, chain, at, agent_id, self.me, nonce, deadline)
            .map_err(RuntimeError::WalletProof)?;
        send(identity.setAgentWallet(agent_id, self.me, deadline, sig).from(self.me).send().await)
            .await?;
        tracing::info!(agent = %self.me, %agent_id, "agent wallet proven");
        Ok(())
    }
}

/// The agent id of the `Registered` event owned by `owner` in `receipt`.
fn registered_id(receipt: &TransactionReceipt, owner: Address) -> Result<U256, RuntimeError> {
    receipt
        .inner
        .logs()
        .iter()
        .filter_map(|log| IdentityRegistry::Registered::decode_log(&log.inner).ok())
        .find(|ev| ev.data.owner == owner)
        .map(|ev| ev.data.agentId)
        .ok_or(RuntimeError::NoRegisteredEvent(receipt.transaction_hash))
}

/// Waits for a sent transaction and insists it succeeded; its receipt.
async fn send(
    sent: Result<
        alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>,
        alloy::contract::Error,
    >,
) -> Result<TransactionReceipt, RuntimeError> {
    let receipt = sent
        .map_err(map_call)?
        .with_timeout(Some(tessera_bindings::client::RECEIPT_TIMEOUT))
        .get_receipt()
        .await
        .map_err(ClientError::from)?;
    if !receipt.status() {
        return Err(ClientError::Reverted(receipt.transaction_hash).into());
    }
    Ok(receipt)
}
