//! What `tessera chain` tells a newcomer: who is who on the local chain,
//! with the keys each command reads (anvil's dev keys, public to anyone,
//! good for this chain only).

use alloy::{hex, signers::local::PrivateKeySigner};
use tessera_anvil::{actors::Actors, deploy::DEMO_AGENTS};
use tessera_bindings::usdc::Usdc;

/// The table of roles: address, what it holds or offers, and the
/// environment line that makes a command act as it.
pub(crate) fn roles(actors: &Actors, spare: &[PrivateKeySigner], sponsor_funds: Usdc) -> String {
    let key = |s: &PrivateKeySigner| format!("0x{}", hex::encode(s.to_bytes()));
    let mut out = String::from(
        "Roles on this chain (anvil's public dev keys: use them on this local chain only):\n",
    );
    let mut row = |role: &str, signer: &PrivateKeySigner, what: &str, var: &str| {
        out.push_str(&format!("  {role:<22} {}  {what}\n", signer.address()));
        out.push_str(&format!("  {:<22} {var}={}\n", "", key(signer)));
    };
    let holds = format!("holds {} (MockUSDC); funds the plans", sponsor_funds.with_unit());
    row("sponsor (tessera serve)", &actors.sponsor, &holds, "TESSERA_SPONSOR_KEY");
    row("arbiter", &actors.arbiter, "rules on disputes", "TESSERA_ARBITER_KEY");
    row("appeal arbiter", &actors.appeal_arbiter, "rules on appeals", "TESSERA_APPEAL_ARBITER_KEY");
    for agent in DEMO_AGENTS {
        let Some(signer) = actors.agents.get(agent.account) else { continue };
        let offers: Vec<String> = agent
            .offers
            .iter()
            .map(|(cap, price)| format!("{cap} {}", Usdc::from_base_units(*price).with_unit()))
            .collect();
        let what = format!("registered: {}", offers.join(", "));
        row(&format!("agent {}", agent.id), signer, &what, "TESSERA_WORKER_KEY");
    }
    for signer in spare {
        row("spare (your own agent)", signer, "not registered yet", "TESSERA_WORKER_KEY");
    }
    out
}
