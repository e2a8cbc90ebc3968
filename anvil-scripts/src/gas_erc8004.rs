//! The ERC-8004 part of the gas bench: what an agent pays once to become an
//! identity (register, set its registration file, prove its wallet, link it
//! to its offer), and what one piece of feedback costs its giver.

use alloy::{
    primitives::{B256, U256, keccak256},
    sol_types::SolEvent,
};
use serde::Serialize;
use tessera_bindings::{
    AgentRegistry, IdentityRegistry, ReputationRegistry,
    erc8004::{
        RegistrationFile, RegistrationRef, Service, TRUST_REPUTATION, agent_registry_id,
        sign_wallet_proof,
    },
};

use crate::{Error, actors::Actors, deploy::confirm, lifecycle::Driver};

/// The scenario's name in the step table.
pub const SCENARIO: &str = "ERC-8004 identity of an agent, then one feedback";

/// What the ERC-8004 scenario measured (receipt `gasUsed`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Erc8004Gas {
    /// `register()`.
    pub register: u64,
    /// `setAgentURI` with the registration file a worker writes.
    pub set_agent_uri: u64,
    /// Bytes of that file's `data:` URI.
    pub registration_uri_len: usize,
    /// `setAgentWallet` with the wallet's EIP-712 proof.
    pub set_agent_wallet: u64,
    /// `AgentRegistry.linkIdentity`.
    pub link_identity: u64,
    /// The four together: an agent's one-time cost.
    pub identity_total: u64,
    /// One `giveFeedback` with two tags, an endpoint, a 70-byte URI and its hash.
    pub give_feedback: u64,
    /// The orchestrator's feedback on one settled task (`--feedback
    /// per-task`): its settlement proof as the URI.
    pub feedback_per_task: u64,
    /// Bytes of that proof's URI.
    pub per_task_uri_len: usize,
    /// The orchestrator's summary of five settled tasks of one executor
    /// in one plan (`--feedback per-plan`).
    pub feedback_per_plan_5: u64,
    /// Bytes of that proof's URI.
    pub per_plan_uri_len: usize,
    /// The agent's ERC-8004 id (demo agent 0), for later feedback.
    #[serde(skip)]
    pub agent_id: U256,
}

/// The settlement proof of `n` paid tasks, as the orchestrator writes it.
fn proof(n: usize, d: &Driver<'_>, plan: bool) -> tessera_bindings::feedback::Proof {
    use tessera_bindings::feedback::{Proof, SettledTask};
    let tasks = (0..n)
        .map(|i| SettledTask {
            task_id: alloy::primitives::U256::from_be_bytes(keccak256(format!("task {i}")).0)
                .to_string(),
            status: "Paid".into(),
            executor_amount: "500000".into(),
            funder_amount: "0".into(),
            tx: keccak256(format!("tx {i}")),
        })
        .collect();
    let plan = plan.then(|| format!("{}", keccak256("plan")));
    Proof::new(d.deployment.chain_id, d.deployment.task_escrow, plan, tasks)
}

/// The orchestrator's settlement-backed feedback from `from` to `agent_id`
/// on `n` settled tasks (`plan`: the per-plan summary), as it gives it; the
/// receipt and the proof URI's length. The gas bench measures every
/// feedback through here (this scenario's rows and the grant path's all-in
/// rows).
pub async fn settled_feedback(
    d: &Driver<'_>,
    from: alloy::primitives::Address,
    agent_id: U256,
    n: usize,
    plan: bool,
) -> Result<(alloy::rpc::types::TransactionReceipt, usize), Error> {
    let reputation_at = d
        .deployment
        .reputation_registry
        .ok_or_else(|| Error::Registry("the deployment has no reputation registry".into()))?;
    let reputation = ReputationRegistry::new(reputation_at, &d.provider);
    // A plan's summary in the compact form, as the orchestrator gives it.
    let p = proof(n, d, plan);
    let (uri, hash) = match p.compact() {
        Some(c) if plan => c.encode(),
        _ => p.encode(),
    };
    let len = uri.len();
    let r = confirm(
        reputation
            .giveFeedback(
                agent_id,
                100,
                0,
                tessera_bindings::feedback::TAG.into(),
                "summarize".into(),
                String::new(),
                uri,
                hash,
            )
            .from(from)
            .send()
            .await,
        "giving settlement-backed feedback",
    )
    .await?;
    Ok((r, len))
}

/// Runs the scenario as demo agent 0 (registered in the AgentRegistry) rated
/// by the client; `None` when the deployment has no ERC-8004 registries.
pub async fn run(d: &mut Driver<'_>, actors: &Actors) -> Result<Option<Erc8004Gas>, Error> {
    let (Some(identity_at), Some(reputation_at)) =
        (d.deployment.identity_registry, d.deployment.reputation_registry)
    else {
        return Ok(None);
    };
    d.scenario(SCENARIO);
    let agent = &actors.agents[0];
    let me = agent.address();
    let chain = d.deployment.chain_id;
    let provider = d.provider.clone();
    let identity = IdentityRegistry::new(identity_at, &provider);

    let r = confirm(identity.register_0().from(me).send().await, "registering an identity").await?;
    d.record("register", &r);
    let agent_id = r
        .inner
        .logs()
        .iter()
        .find_map(|l| IdentityRegistry::Registered::decode_log(&l.inner).ok())
        .map(|e| e.data.agentId)
        .ok_or_else(|| Error::Registry(format!("{} registered no agent", r.transaction_hash)))?;

    let mut file = RegistrationFile::new(
        "summarizer-a",
        "Extractive summaries by sentence scoring; also lists named entities",
    );
    for (name, endpoint) in [
        ("tessera-offers", agent_registry_id(chain, d.deployment.agent_registry)),
        ("agentWallet", agent_registry_id(chain, me)),
        ("blobs", "https://agent.example/blobs".to_owned()),
    ] {
        file.services.push(Service { name: name.into(), endpoint, version: None });
    }
    file.supported_trust.push(TRUST_REPUTATION.into());
    file.registrations.push(RegistrationRef {
        agent_id: agent_id.to::<u64>(),
        agent_registry: (chain, identity_at),
    });
    let uri = file.to_data_uri();
    let registration_uri_len = uri.len();
    let r = confirm(identity.setAgentURI(agent_id, uri).from(me).send().await, "setting the URI")
        .await?;
    d.record("setAgentURI", &r);

    let deadline = U256::from(d.now().await? + 120);
    let nonce = identity
        .walletNonce(me)
        .call()
        .await
        .map_err(crate::contract_err("reading the wallet nonce"))?;
    let sig = sign_wallet_proof(agent, chain, identity_at, agent_id, me, nonce, deadline)
        .map_err(|e| Error::Key(format!("signing the wallet proof: {e}")))?;
    let r = confirm(
        identity.setAgentWallet(agent_id, me, deadline, sig).from(me).send().await,
        "proving the wallet",
    )
    .await?;
    d.record("setAgentWallet", &r);

    let registry = AgentRegistry::new(d.deployment.agent_registry, &provider);
    let r = confirm(registry.linkIdentity(agent_id).from(me).send().await, "linking the identity")
        .await?;
    d.record("linkIdentity", &r);

    let reputation = ReputationRegistry::new(reputation_at, &provider);
    let feedback_uri = format!("ipfs://bafkrei{}", "a".repeat(52));
    let r = confirm(
        reputation
            .giveFeedback(
                agent_id,
                100,
                0,
                "settled".into(),
                "summarize".into(),
                String::new(),
                feedback_uri.clone(),
                B256::from(keccak256(feedback_uri.as_bytes())),
            )
            .from(actors.client.address())
            .send()
            .await,
        "giving feedback",
    )
    .await?;
    d.record("giveFeedback", &r);
    let mut proof_gas = Vec::new();
    for (n, plan, step) in
        [(1, false, "giveFeedback per task"), (5, true, "giveFeedback per plan (5)")]
    {
        let (r, len) = settled_feedback(d, actors.sponsor.address(), agent_id, n, plan).await?;
        d.record(step, &r);
        proof_gas.push((r.gas_used, len));
    }

    let gas = |step: &str| {
        d.steps.iter().rev().find(|s| s.scenario == SCENARIO && s.step == step).map_or(0, |s| s.gas)
    };
    let (register, set_agent_uri, set_agent_wallet, link_identity) =
        (gas("register"), gas("setAgentURI"), gas("setAgentWallet"), gas("linkIdentity"));
    Ok(Some(Erc8004Gas {
        register,
        set_agent_uri,
        registration_uri_len,
        set_agent_wallet,
        link_identity,
        identity_total: register + set_agent_uri + set_agent_wallet + link_identity,
        give_feedback: gas("giveFeedback"),
        feedback_per_task: proof_gas[0].0,
        per_task_uri_len: proof_gas[0].1,
        feedback_per_plan_5: proof_gas[1].0,
        per_plan_uri_len: proof_gas[1].1,
        agent_id,
    }))
}
