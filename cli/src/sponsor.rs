//! The sponsor's side of an operator-mode orchestrator, for the command
//! line: the sponsor's key (TESSERA_SPONSOR_KEY or `--keystore`), used
//! here only: it signs in (EIP-4361), signs each plan's grant (and a
//! permit when the allowance is short), and revokes a grant on chain.
//! Only signatures go to the server.

use std::path::PathBuf;

use alloy::{
    network::EthereumWallet,
    primitives::{Address, Bytes, U256},
    signers::{SignerSync, local::PrivateKeySigner},
};
use eyre::{Context, Result, bail, eyre};
use serde_json::{Value, json};
use tessera_bindings::{
    TaskEscrow,
    grant::{self, GrantTerms, SignedGrant},
    permit::{TokenDomain, sign_permit},
};
use tessera_orchestrator::auth::{SiweMessage, format_rfc3339};

use crate::client::Client;

/// The sponsor's key variable (also serve's single-key mode's).
pub(crate) const SPONSOR_KEY_VAR: &str = "TESSERA_SPONSOR_KEY";

/// How long a CLI session lasts.
const SESSION_SECS: u64 = 3600;

/// The sponsor's key: TESSERA_SPONSOR_KEY, or the keystore at `keystore`
/// (its password from TESSERA_KEYSTORE_PASSWORD); `None` without either.
pub(crate) fn key(keystore: Option<&PathBuf>) -> Result<Option<PrivateKeySigner>> {
    let from_env = std::env::var(SPONSOR_KEY_VAR).ok().filter(|k| !k.trim().is_empty());
    match (keystore, from_env) {
        (Some(_), Some(_)) => {
            bail!("give the sponsor's key either {SPONSOR_KEY_VAR} or --keystore, not both")
        }
        (Some(path), None) => {
            let password = crate::deploying::keystore_password(None)?;
            let signer = PrivateKeySigner::decrypt_keystore(path, password.as_bytes())
                .map_err(|e| crate::deploying::keystore_error(path, &e))?;
            Ok(Some(signer))
        }
        (None, Some(k)) => Ok(Some(
            k.trim().parse().map_err(|_| eyre!("{SPONSOR_KEY_VAR} is not a hex private key"))?,
        )),
        (None, None) => Ok(None),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The orchestrator's mode and deployment, as `/api/health` says.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    /// Operator mode.
    pub(crate) operator: Option<Address>,
    /// Its chain.
    pub(crate) chain_id: u64,
    /// Its escrow.
    pub(crate) escrow: Address,
    /// The token a permit may be signed for, when the sponsor's own
    /// deployment record says (`--deployment`); any otherwise.
    pub(crate) token: Option<Address>,
}

impl Server {
    /// Checks the server's word against the sponsor's own deployment record.
    pub(crate) fn trust(&mut self, d: &tessera_bindings::deployment::Deployment) -> Result<()> {
        if d.chain_id != self.chain_id || d.task_escrow != self.escrow {
            bail!(
                "the server names escrow {} on chain {}, but the deployment record has {} on chain {}: \
                 nothing signed",
                self.escrow,
                self.chain_id,
                d.task_escrow,
                d.chain_id
            );
        }
        self.token = Some(d.token);
        Ok(())
    }
}

/// What `/api/health` says of the server.
pub(crate) async fn server(client: &Client) -> Result<Server> {
    let h = client.call(reqwest::Method::GET, "/api/health", None).await?;
    let addr = |v: &Value| v.as_str().and_then(|s| s.parse::<Address>().ok());
    Ok(Server {
        operator: (h["mode"] == "operator").then(|| addr(&h["operator"])).flatten(),
        chain_id: h["chain_id"].as_u64().ok_or_else(|| eyre!("/api/health names no chain id"))?,
        escrow: addr(&h["escrow"]).ok_or_else(|| eyre!("/api/health names no escrow"))?,
        token: None,
    })
}

/// The message a sponsor signs to sign in at `base` (domain: its
/// authority) on `chain_id` with `nonce`.
pub(crate) fn sign_in_message(
    base: &str,
    address: Address,
    chain_id: u64,
    nonce: &str,
) -> SiweMessage {
    let authority = base
        .split_once("://")
        .map_or(base, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let now = now();
    SiweMessage {
        domain: authority,
        address,
        statement: Some(
            "Sign in to the Tessera orchestrator to propose, fund and decide your plans.".into(),
        ),
        uri: base.to_owned(),
        version: "1".into(),
        chain_id,
        nonce: nonce.to_owned(),
        issued_at: now,
        expiration_time: Some(now + SESSION_SECS),
        not_before: None,
        request_id: None,
        resources: vec![],
    }
}

/// Signs in at the server with `signer`: the session token.
pub(crate) async fn sign_in(
    client: &Client,
    signer: &PrivateKeySigner,
    chain_id: u64,
) -> Result<String> {
    let nonce = client.call(reqwest::Method::GET, "/api/auth/nonce", None).await?;
    let nonce = nonce["nonce"].as_str().ok_or_else(|| eyre!("/api/auth/nonce gave no nonce"))?;
    let message = sign_in_message(&client.base, signer.address(), chain_id, nonce).to_text();
    let signature = signer.sign_message_sync(message.as_bytes())?;
    let reply = client
        .call(
            reqwest::Method::POST,
            "/api/auth/login",
            Some(&json!({"message": message, "signature": Bytes::from(signature.as_bytes().to_vec())})),
        )
        .await
        .wrap_err("signing in")?;
    let token = reply["token"].as_str().ok_or_else(|| eyre!("the sign-in gave no token"))?;
    eprintln!(
        "signed in as {} until {}",
        signer.address(),
        reply["expires_at"].as_u64().map(format_rfc3339).unwrap_or_default()
    );
    Ok(token.to_owned())
}

/// The approval body for run `id`: its grant request fetched, checked
/// against what this sponsor expects, and signed (with a permit when asked).
pub(crate) async fn grant_body(
    client: &Client,
    signer: &PrivateKeySigner,
    server: &Server,
    id: &str,
    plan_cost: Option<u128>,
) -> Result<Value> {
    let req = client.call(reqwest::Method::GET, &format!("/api/runs/{id}/grant"), None).await?;
    let terms: GrantTerms = serde_json::from_value(req["terms"].clone())
        .wrap_err("the grant request's terms do not read")?;
    // Signed only as this sponsor, for this plan, to the server's operator,
    // for no more than the plan shown.
    if terms.sponsor != signer.address() {
        bail!("the grant asked for names sponsor {}, not {}", terms.sponsor, signer.address());
    }
    if terms.plan_id.to_string() != id {
        bail!("the grant asked for is for plan {}, not {id}", terms.plan_id);
    }
    if Some(terms.operator) != server.operator {
        bail!("the grant asked for names operator {}, not the server's", terms.operator);
    }
    if let Some(cost) = plan_cost.filter(|c| terms.budget > *c) {
        bail!("the grant asked for a budget of {} over the plan's cost {cost}", terms.budget);
    }
    let signature = grant::sign(signer, server.chain_id, server.escrow, &terms)?;
    println!(
        "signing a grant of {} USDC for plan {id} to operator {} (valid until {})",
        tessera_bindings::usdc::Usdc::from_base_units(terms.budget),
        terms.operator,
        format_rfc3339(terms.valid_until)
    );
    let mut body = json!({"grant": SignedGrant { terms, signature }});
    let permit = &req["permit"];
    if !permit.is_null() {
        let td = &permit["typed_data"];
        let domain = TokenDomain {
            name: td["domain"]["name"].as_str().unwrap_or_default().to_owned(),
            version: td["domain"]["version"].as_str().unwrap_or_default().to_owned(),
            chain_id: server.chain_id,
            token: td["domain"]["verifyingContract"]
                .as_str()
                .and_then(|a| a.parse().ok())
                .ok_or_else(|| eyre!("the permit asked for names no token"))?,
        };
        let spender: Address = td["message"]["spender"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| eyre!("the permit asked for names no spender"))?;
        if server.token.is_some_and(|t| t != domain.token) {
            bail!("the permit asked for is for token {}, not the deployment's", domain.token);
        }
        if spender != server.escrow {
            bail!(
                "the permit asked for is for spender {spender}, not the escrow {}",
                server.escrow
            );
        }
        let dec = |v: &Value, what: &str| {
            v.as_str()
                .and_then(|s| U256::from_str_radix(s, 10).ok())
                .ok_or_else(|| eyre!("the permit's {what} is not a number"))
        };
        let value = dec(&permit["value"], "value")?;
        let nonce = dec(&permit["nonce"], "nonce")?;
        let deadline =
            permit["deadline"].as_u64().ok_or_else(|| eyre!("the permit has no deadline"))?;
        let sig = sign_permit(signer, &domain, spender, value, nonce, U256::from(deadline))?;
        let mut bytes = Vec::with_capacity(65);
        bytes.extend_from_slice(sig.r.as_slice());
        bytes.extend_from_slice(sig.s.as_slice());
        bytes.push(sig.v);
        println!("signing a permit: the escrow may pull up to {value} (base units) of your USDC");
        body["permit"] = json!({"value": value.to_string(), "deadline": deadline, "signature": Bytes::from(bytes)});
    }
    Ok(body)
}

/// `tessera runs revoke-grant <run>`: the sponsor revokes the grant that
/// funds a run, on chain, from its own key.
pub(crate) async fn revoke(
    client: &Client,
    signer: PrivateKeySigner,
    rpc_url: &str,
    id: &str,
) -> Result<()> {
    let server = server(client).await?;
    let req = client.call(reqwest::Method::GET, &format!("/api/runs/{id}/grant"), None).await?;
    let grant: SignedGrant = serde_json::from_value(req["granted"].clone())
        .map_err(|_| eyre!("run {id} was not approved with a grant: nothing to revoke"))?;
    if grant.terms.sponsor != signer.address() {
        bail!("run {id}'s grant is {}'s, not {}'s", grant.terms.sponsor, signer.address());
    }
    let url = rpc_url.parse().map_err(|_| eyre!("--rpc-url {rpc_url:?} is not a URL"))?;
    let provider = tessera_bindings::client::connect(url, EthereumWallet::new(signer));
    let escrow = TaskEscrow::new(server.escrow, provider);
    let receipt = escrow
        .revokeGrant(grant.terms.to_sol())
        .send()
        .await
        .wrap_err("sending revokeGrant")?
        .get_receipt()
        .await
        .wrap_err("waiting for revokeGrant")?;
    if !receipt.status() {
        bail!("revokeGrant reverted in {}", receipt.transaction_hash);
    }
    println!("grant for plan {id} revoked in {}", receipt.transaction_hash);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_naming_another_escrow_or_chain_than_the_sponsors_record_is_not_trusted() {
        let record: tessera_bindings::deployment::Deployment = serde_json::from_value(json!({
            "chainId": 31337, "deployBlock": 1,
            "taskEscrow": "0x00000000000000000000000000000000000000e5",
            "agentRegistry": "0x00000000000000000000000000000000000000a6",
            "token": "0x00000000000000000000000000000000000000c0",
            "owner": "0x0000000000000000000000000000000000000001",
            "arbiter": "0x0000000000000000000000000000000000000002",
            "appealArbiter": "0x0000000000000000000000000000000000000003"
        }))
        .unwrap();
        let server =
            |chain_id, escrow: Address| Server { operator: None, chain_id, escrow, token: None };
        let mut good = server(31337, record.task_escrow);
        good.trust(&record).unwrap();
        assert_eq!(good.token, Some(record.token), "permits only for the record's token");
        let err = server(31337, Address::repeat_byte(9)).trust(&record).unwrap_err().to_string();
        assert!(err.contains("nothing signed"), "{err}");
        assert!(server(1, record.task_escrow).trust(&record).is_err(), "another chain");
    }
}
