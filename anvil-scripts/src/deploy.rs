//! Deploying the contracts to a chain and preparing it for the demo.

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
};
use tessera_bindings::{
    AgentRegistry, IdentityRegistry, MockUSDC, ReputationRegistry, TaskEscrow, capability,
    card::{AgentCard, CapabilityOffer, OFFLINE_MODEL, Price, Role},
    client::ClientError,
    deployment::Deployment,
};

use crate::{Error, actors::Actors, contract_err};

/// Token base units the deploy leaves in the escrow for good (see [`deploy`]).
pub const ESCROW_SEED: u64 = 1;

/// What to deploy with.
#[derive(Debug, Clone)]
pub struct DeployConfig {
    /// Seconds the arbiter has to rule on a dispute.
    pub dispute_window: u32,
    /// Seconds to appeal a ruling (0 makes rulings final at once).
    pub appeal_window: u32,
    /// Seconds the appeal arbiter has to rule on an appeal; past it the
    /// first ruling stands.
    pub appeal_ruling_window: u32,
    /// MockUSDC minted to the sponsor, in base units (6 decimals).
    pub sponsor_funds: U256,
}

impl Default for DeployConfig {
    fn default() -> Self {
        Self {
            dispute_window: 24 * 3600,
            appeal_window: 24 * 3600,
            appeal_ruling_window: 24 * 3600,
            sponsor_funds: U256::from(1_000_000u64 * 1_000_000), // 1,000,000 USDC
        }
    }
}

/// One demo executor agent: which account, its card, its offers.
#[derive(Debug, Clone)]
pub struct DemoAgent {
    /// Index into [`Actors::agents`].
    pub account: usize,
    /// Short id, also in its card.
    pub id: &'static str,
    /// What it does.
    pub description: &'static str,
    /// (capability, price in USDC base units).
    pub offers: &'static [(&'static str, u128)],
}

/// The demo agents. Two offer `summarize` so the cheapest-active choice matters.
pub const DEMO_AGENTS: &[DemoAgent] = &[
    DemoAgent {
        account: 0,
        id: "summarizer-a",
        description: "Extractive summaries by sentence scoring; also lists named entities",
        offers: &[("summarize", 500_000), ("extract-entities", 300_000)],
    },
    DemoAgent {
        account: 1,
        id: "summarizer-b",
        description: "Extractive summaries by sentence scoring",
        offers: &[("summarize", 400_000)],
    },
    DemoAgent {
        account: 2,
        id: "translator",
        description: "Glossary translation between English, French and Spanish",
        offers: &[("translate", 800_000)],
    },
    DemoAgent {
        account: 3,
        id: "sentiment",
        description: "Lexicon sentiment classification",
        offers: &[("sentiment-classify", 200_000)],
    },
    DemoAgent {
        account: 4,
        id: "extractor",
        description: "Named-entity extraction",
        offers: &[("extract-entities", 250_000)],
    },
];

impl DemoAgent {
    /// The agent's card: an offline executor with the demo offers.
    pub fn card(&self) -> AgentCard {
        AgentCard {
            id: self.id.to_owned(),
            description: self.description.to_owned(),
            role: Role::Executor,
            capabilities: self
                .offers
                .iter()
                .map(|&(name, price)| CapabilityOffer::new(name, Price::from_base_units(price)))
                .collect(),
            model: OFFLINE_MODEL.to_owned(),
            instructions: "Work offline with the built-in algorithms.".to_owned(),
            publish_instructions: false,
            delegates: Vec::new(),
            max_delegated_outstanding: None,
            handler: None,
        }
    }

    /// The agent card's registry URI ([`AgentCard::to_uri`]: what the
    /// registry's metadata URI holds).
    pub fn card_uri(&self) -> String {
        self.card().to_uri()
    }
}

/// Who a deployment names, and which token it settles in: what
/// [`deploy_to`] needs on any chain.
#[derive(Debug, Clone)]
pub struct DeployRoles {
    /// Deploys the contracts and owns the escrow; signs every deploy
    /// transaction (the provider's wallet must hold its key).
    pub owner: Address,
    /// The arbiter written into the escrow.
    pub arbiter: Address,
    /// The appeal arbiter written into the escrow.
    pub appeal_arbiter: Address,
    /// An existing ERC-20 with 6 decimals (a real USDC) to settle in;
    /// `None` deploys MockUSDC.
    pub token: Option<Address>,
    /// An existing ERC-8004 identity registry to link agents to; `None`
    /// deploys one (or takes the one `reputation_registry` is bound to).
    pub identity_registry: Option<Address>,
    /// An existing ERC-8004 reputation registry; `None` deploys one bound to
    /// the identity registry.
    pub reputation_registry: Option<Address>,
    /// Who gets [`DeployConfig::sponsor_funds`] of a freshly deployed
    /// MockUSDC; nobody when `None` (and nothing is ever minted of an
    /// existing token).
    pub fund: Option<Address>,
}

/// Deploys MockUSDC, AgentRegistry and TaskEscrow on a local chain, mints the
/// sponsor's funds and returns the deployment record.
pub async fn deploy(
    provider: &DynProvider,
    actors: &Actors,
    cfg: &DeployConfig,
) -> Result<Deployment, Error> {
    let roles = DeployRoles {
        owner: actors.deployer.address(),
        arbiter: actors.arbiter.address(),
        appeal_arbiter: actors.appeal_arbiter.address(),
        token: None,
        identity_registry: None,
        reputation_registry: None,
        fund: Some(actors.sponsor.address()),
    };
    deploy_to(provider, &roles, cfg).await
}

/// Deploys the ERC-8004 identity and reputation registries (unless `roles`
/// names existing ones), AgentRegistry and TaskEscrow (and MockUSDC unless
/// `roles.token` names an existing token, which must have code and 6
/// decimals) on any chain, and returns the deployment record: chain id, and
/// the block of the first deployment transaction.
pub async fn deploy_to(
    provider: &DynProvider,
    roles: &DeployRoles,
    cfg: &DeployConfig,
) -> Result<Deployment, Error> {
    let owner = roles.owner;
    let chain_id = provider.get_chain_id().await?;

    let (token, mock_block) = match roles.token {
        Some(token) => {
            check_token(provider, token, chain_id).await?;
            (token, None)
        }
        None => {
            let receipt = deploy_receipt(
                MockUSDC::deploy_builder(provider, owner).from(owner),
                "deploying MockUSDC",
            )
            .await?;
            let token = receipt.contract_address.expect("deploy receipt has an address");
            (token, Some(receipt.block_number.expect("mined receipt has a block")))
        }
    };

    let erc8004 = deploy_erc8004(provider, roles, chain_id).await?;
    let registry_receipt = deploy_receipt(
        AgentRegistry::deploy_builder(provider, erc8004.identity).from(owner),
        "deploying AgentRegistry",
    )
    .await?;
    let agent_registry = registry_receipt.contract_address.expect("deploy receipt has an address");
    let deploy_block = mock_block
        .or(erc8004.first_block)
        .or(registry_receipt.block_number)
        .expect("mined receipt has a block");

    let escrow_receipt = deploy_receipt(
        TaskEscrow::deploy_builder(
            provider,
            token,
            agent_registry,
            owner,
            roles.arbiter,
            roles.appeal_arbiter,
            cfg.dispute_window,
            cfg.appeal_window,
            cfg.appeal_ruling_window,
        )
        .from(owner),
        "deploying TaskEscrow",
    )
    .await?;
    let task_escrow = escrow_receipt.contract_address.expect("deploy receipt has an address");

    if mock_block.is_some() {
        let usdc = MockUSDC::new(token, provider);
        if let Some(sponsor) = roles.fund {
            confirm(
                usdc.mint(sponsor, cfg.sponsor_funds).from(owner).send().await,
                "minting sponsor funds",
            )
            .await?;
        }
        // Seed the escrow with dust that belongs to no task, so its token balance
        // slot never returns to zero: otherwise the first create after every moment
        // the escrow is empty pays for a fresh storage slot (20,000 gas instead of
        // 2,900) and the payout that empties it earns only a partial refund.
        confirm(
            usdc.mint(task_escrow, U256::from(ESCROW_SEED)).from(owner).send().await,
            "seeding the escrow",
        )
        .await?;
    }

    let deployment = Deployment {
        chain_id,
        deploy_block,
        task_escrow,
        agent_registry,
        token,
        owner,
        arbiter: roles.arbiter,
        appeal_arbiter: roles.appeal_arbiter,
        identity_registry: Some(erc8004.identity),
        reputation_registry: Some(erc8004.reputation),
        rpc_url: None,
        ws_url: None,
    };
    tracing::info!(?deployment, "deployed");
    Ok(deployment)
}

/// The ERC-8004 registries a deployment uses.
struct Erc8004 {
    identity: Address,
    reputation: Address,
    /// Block of the first of them deployed here; `None` when both existed.
    first_block: Option<u64>,
}

/// Deploys the ERC-8004 registries `roles` does not name. A named
/// reputation registry must be bound to the named identity registry (or,
/// when none is named, gives it).
async fn deploy_erc8004(
    provider: &DynProvider,
    roles: &DeployRoles,
    chain_id: u64,
) -> Result<Erc8004, Error> {
    let mut first_block = None;
    let bound = match roles.reputation_registry {
        Some(reputation) => {
            check_code(provider, reputation, "reputation registry", chain_id).await?;
            let identity = ReputationRegistry::new(reputation, provider)
                .getIdentityRegistry()
                .call()
                .await
                .map_err(contract_err("reading the reputation registry's identity registry"))?;
            Some((reputation, identity))
        }
        None => None,
    };
    let identity = match (roles.identity_registry, bound) {
        (Some(named), Some((reputation, identity))) if named != identity => {
            return Err(Error::Registry(format!(
                "reputation registry {reputation} is bound to identity registry {identity}, not {named}"
            )));
        }
        (Some(named), _) => {
            check_code(provider, named, "identity registry", chain_id).await?;
            named
        }
        (None, Some((_, identity))) => identity,
        (None, None) => {
            let receipt = deploy_receipt(
                IdentityRegistry::deploy_builder(provider).from(roles.owner),
                "deploying IdentityRegistry",
            )
            .await?;
            first_block = receipt.block_number;
            receipt.contract_address.expect("deploy receipt has an address")
        }
    };
    let reputation = match bound {
        Some((reputation, _)) => reputation,
        None => {
            let receipt = deploy_receipt(
                ReputationRegistry::deploy_builder(provider, identity).from(roles.owner),
                "deploying ReputationRegistry",
            )
            .await?;
            first_block = first_block.or(receipt.block_number);
            receipt.contract_address.expect("deploy receipt has an address")
        }
    };
    Ok(Erc8004 { identity, reputation, first_block })
}

/// Insists an existing contract the deployment names has code.
async fn check_code(
    provider: &DynProvider,
    at: Address,
    what: &str,
    chain_id: u64,
) -> Result<(), Error> {
    if provider.get_code_at(at).await?.is_empty() {
        return Err(Error::Registry(format!("{what} {at} has no code on chain {chain_id}")));
    }
    Ok(())
}

/// Insists `token` is a contract answering `decimals()` with 6.
async fn check_token(provider: &DynProvider, token: Address, chain_id: u64) -> Result<(), Error> {
    let code = provider.get_code_at(token).await?;
    if code.is_empty() {
        return Err(Error::Token(format!("token {token} has no code on chain {chain_id}")));
    }
    let decimals = MockUSDC::new(token, provider).decimals().call().await.map_err(|_| {
        Error::Token(format!("token {token} does not answer decimals() on chain {chain_id}"))
    })?;
    if decimals != 6 {
        return Err(Error::Token(format!(
            "token {token} has {decimals} decimals, not 6 (Tessera settles in a USDC)"
        )));
    }
    Ok(())
}

/// Registers the demo agents (skipping any already registered).
pub async fn register_demo_agents(
    provider: &DynProvider,
    actors: &Actors,
    registry: Address,
) -> Result<(), Error> {
    let registry = AgentRegistry::new(registry, provider);
    for agent in DEMO_AGENTS {
        let from = actors.agent(agent.account);
        let status =
            registry.getAgent(from).call().await.map_err(contract_err("reading agent"))?.status;
        if status != 0 {
            continue;
        }
        let caps = agent
            .offers
            .iter()
            .map(|(c, _)| capability::encode(c).expect("demo capability names are valid"))
            .collect::<Vec<_>>();
        let prices = agent.offers.iter().map(|(_, p)| *p).collect::<Vec<_>>();
        confirm(
            registry.register(agent.card_uri(), caps, prices).from(from).send().await,
            format!("registering {}", agent.id),
        )
        .await?;
    }
    Ok(())
}

async fn deploy_receipt<D: alloy::contract::CallDecoder + Unpin>(
    builder: alloy::contract::CallBuilder<&DynProvider, D>,
    context: &str,
) -> Result<alloy::rpc::types::TransactionReceipt, Error> {
    confirm(builder.send().await, context).await
}

/// Waits for a sent transaction (at most [`RECEIPT_TIMEOUT`]) and insists
/// it succeeded.
///
/// [`RECEIPT_TIMEOUT`]: tessera_bindings::client::RECEIPT_TIMEOUT
pub async fn confirm(
    sent: Result<
        alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>,
        alloy::contract::Error,
    >,
    context: impl Into<String>,
) -> Result<alloy::rpc::types::TransactionReceipt, Error> {
    let context = context.into();
    let pending = sent.map_err(contract_err(context.clone()))?;
    let receipt = pending
        .with_timeout(Some(tessera_bindings::client::RECEIPT_TIMEOUT))
        .get_receipt()
        .await
        .map_err(|e| Error::Contract {
            context: context.clone(),
            source: Box::new(ClientError::Pending(e)),
        })?;
    if !receipt.status() {
        return Err(Error::Contract {
            context,
            source: Box::new(ClientError::Reverted(receipt.transaction_hash)),
        });
    }
    Ok(receipt)
}
