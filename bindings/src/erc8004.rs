//! ERC-8004 ("Trustless Agents") off-chain pieces: the agent registration
//! file an identity's URI resolves to, the `{namespace}:{chainId}:{registry}`
//! name of an identity registry, and the EIP-712 proof an agent wallet signs
//! for `setAgentWallet`.
//!
//! The registration file is written inline as a base64 `data:` URI (what the
//! standard recommends for a file kept entirely on chain), so nothing has to
//! be hosted; [`RegistrationFile::from_uri`] also reads percent-encoded and
//! raw `data:` URIs.

use alloy::{
    primitives::{Address, B256, Bytes, U256},
    signers::{SignerSync, local::PrivateKeySigner},
    sol,
    sol_types::{SolStruct, eip712_domain},
};
use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use serde::{Deserialize, Serialize};

use crate::{
    card::{CapabilityOffer, MAX_CAPABILITIES},
    envelope::{EnvelopeCodec, EnvelopeError},
};

/// The `type` every registration file carries.
pub const REGISTRATION_TYPE: &str = "https://eips.ethereum.org/EIPS/eip-8004#registration-v1";

/// The trust model a Tessera agent declares: feedback in the reputation
/// registry, backed by the escrow's settlements.
pub const TRUST_REPUTATION: &str = "reputation";

/// Largest registration file read back, in bytes.
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;

/// The EIP-712 domain name of the identity registry (the reference one's).
pub const DOMAIN_NAME: &str = "ERC8004IdentityRegistry";
/// The EIP-712 domain version of the identity registry.
pub const DOMAIN_VERSION: &str = "1";

/// Seconds a wallet proof is made valid for; the registry accepts at most
/// five minutes.
pub const PROOF_VALIDITY_SECS: u64 = 120;

sol! {
    /// The struct an agent wallet signs to be attached to an agent.
    #[derive(Debug)]
    struct AgentWalletSet {
        uint256 agentId;
        address newWallet;
        address owner;
        uint256 nonce;
        uint256 deadline;
    }
}

/// The name of an identity registry across chains, as registration files
/// and feedback files write it: `eip155:{chainId}:{address}`.
pub fn agent_registry_id(chain_id: u64, identity_registry: Address) -> String {
    format!("eip155:{chain_id}:{identity_registry}")
}

/// One way to reach an agent, as the registration file lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// What kind of endpoint (`web`, `A2A`, `MCP`, ... or a Tessera name).
    pub name: String,
    /// Where.
    pub endpoint: String,
    /// The protocol version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One identity of the agent: an agent id in an identity registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationRef {
    /// The agent id (the ERC-721 token id).
    pub agent_id: u64,
    /// The registry, as [`agent_registry_id`] writes it.
    #[serde(with = "registry_ref")]
    pub agent_registry: (u64, Address),
}

/// `(chainId, address)` as `eip155:{chainId}:{address}`.
mod registry_ref {
    use alloy::primitives::Address;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(v: &(u64, Address), s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::agent_registry_id(v.0, v.1))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<(u64, Address), D::Error> {
        let text = String::deserialize(d)?;
        let mut parts = text.splitn(3, ':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("eip155"), Some(chain), Some(address)) => Ok((
                chain.parse().map_err(D::Error::custom)?,
                address.parse().map_err(D::Error::custom)?,
            )),
            _ => Err(D::Error::custom(format!(
                "agentRegistry {text:?} is not eip155:{{chainId}}:{{address}}"
            ))),
        }
    }
}

/// The agent registration file an identity's URI resolves to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationFile {
    /// Always [`REGISTRATION_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The agent's name (a Tessera agent's card id).
    pub name: String,
    /// What it does.
    pub description: String,
    /// An image, for ERC-721 apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// How to reach it.
    #[serde(default)]
    pub services: Vec<Service>,
    /// Whether it takes x402 payments (Tessera agents are paid through the escrow).
    #[serde(default)]
    pub x402_support: bool,
    /// Whether it takes work.
    #[serde(default = "yes")]
    pub active: bool,
    /// Its identities.
    #[serde(default)]
    pub registrations: Vec<RegistrationRef>,
    /// The trust models it supports.
    #[serde(default)]
    pub supported_trust: Vec<String>,
    /// What it offers (a Tessera extension): each capability with its price
    /// and descriptor, as its card publishes them ([`crate::describe`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<CapabilityOffer>,
}

fn yes() -> bool {
    true
}

/// Why a registration file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The URI is not an inline JSON `data:` URI within [`MAX_REGISTRATION_BYTES`].
    #[error("registration file URI: {0}")]
    Uri(#[from] EnvelopeError),
    /// The JSON is not a registration file.
    #[error("registration file: {0}")]
    Json(#[from] serde_json::Error),
    /// Its capabilities break a bound of the card model.
    #[error("registration file {0}")]
    Capabilities(String),
    /// The `type` is not [`REGISTRATION_TYPE`].
    #[error("registration file type {0:?} is not {REGISTRATION_TYPE}")]
    Type(String),
}

impl RegistrationFile {
    /// A file of type [`REGISTRATION_TYPE`], active, without x402, with
    /// `services`, `registrations` and `supported_trust` empty.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            kind: REGISTRATION_TYPE.to_owned(),
            name: name.into(),
            description: description.into(),
            image: None,
            services: Vec::new(),
            x402_support: false,
            active: true,
            registrations: Vec::new(),
            supported_trust: Vec::new(),
            capabilities: Vec::new(),
        }
    }

    /// The file as a `data:application/json;base64,` URI.
    pub fn to_data_uri(&self) -> String {
        // Strings, booleans and integers always serialize.
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("data:application/json;base64,{}", BASE64.encode(json))
    }

    /// Reads a file from an inline `data:` URI (base64, percent-encoded or
    /// raw JSON), at most [`MAX_REGISTRATION_BYTES`].
    pub fn from_uri(uri: &str) -> Result<Self, RegistrationError> {
        let codec = EnvelopeCodec {
            inline_limit: MAX_REGISTRATION_BYTES,
            max_bytes: MAX_REGISTRATION_BYTES,
        };
        let file: Self = serde_json::from_slice(&codec.fetch_inline(uri)?)?;
        if file.kind != REGISTRATION_TYPE {
            return Err(RegistrationError::Type(file.kind));
        }
        if file.capabilities.len() > MAX_CAPABILITIES {
            return Err(RegistrationError::Capabilities(format!(
                "at most {MAX_CAPABILITIES} capabilities, not {}",
                file.capabilities.len()
            )));
        }
        for (i, offer) in file.capabilities.iter().enumerate() {
            crate::capability::check(&offer.name)
                .map_err(|e| RegistrationError::Capabilities(format!("capabilities[{i}]: {e}")))?;
            offer
                .described()
                .check(&format!("capabilities[{i}]"))
                .map_err(|e| RegistrationError::Capabilities(e.to_string()))?;
        }
        Ok(file)
    }

    /// The agent id the file names in the identity registry `identity` on
    /// `chain_id`, if it names one there.
    pub fn agent_id_in(&self, chain_id: u64, identity: Address) -> Option<u64> {
        self.registrations
            .iter()
            .find(|r| r.agent_registry == (chain_id, identity))
            .map(|r| r.agent_id)
    }
}

/// The EIP-712 hash `new_wallet` signs to be made `agent_id`'s wallet by
/// `owner` in the identity registry `identity` on `chain_id`, with the
/// wallet's `nonce` (the registry's `walletNonce(new_wallet)`, used up when
/// the proof lands, so a proof cannot be sent twice), valid until `deadline`
/// (unix seconds). The registry's `agentWalletDigest` answers the same for
/// the wallet's current nonce.
pub fn wallet_proof_hash(
    chain_id: u64,
    identity: Address,
    agent_id: U256,
    new_wallet: Address,
    owner: Address,
    nonce: U256,
    deadline: U256,
) -> B256 {
    let domain = eip712_domain! {
        name: DOMAIN_NAME,
        version: DOMAIN_VERSION,
        chain_id: chain_id,
        verifying_contract: identity,
    };
    AgentWalletSet { agentId: agent_id, newWallet: new_wallet, owner, nonce, deadline }
        .eip712_signing_hash(&domain)
}

/// `wallet`'s 65-byte signature (`r ‖ s ‖ v`, v 27 or 28) of the proof that
/// it is `agent_id`'s wallet ([`wallet_proof_hash`], the wallet being the
/// signer's address), for the wallet's `nonce`.
pub fn sign_wallet_proof(
    wallet: &PrivateKeySigner,
    chain_id: u64,
    identity: Address,
    agent_id: U256,
    owner: Address,
    nonce: U256,
    deadline: U256,
) -> Result<Bytes, alloy::signers::Error> {
    let hash =
        wallet_proof_hash(chain_id, identity, agent_id, wallet.address(), owner, nonce, deadline);
    let sig = wallet.sign_hash_sync(&hash)?;
    Ok(Bytes::from(sig.as_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegistrationFile {
        let mut file = RegistrationFile::new("summarizer-a", "Extractive summaries");
        file.services.push(Service {
            name: "blobs".into(),
            endpoint: "https://agent.example/blobs".into(),
            version: None,
        });
        file.registrations.push(RegistrationRef {
            agent_id: 22,
            agent_registry: (31337, Address::repeat_byte(7)),
        });
        file.supported_trust.push(TRUST_REPUTATION.into());
        file
    }

    #[test]
    fn registration_file_carries_described_capabilities_bounded() {
        let mut file = sample();
        let mut offer = CapabilityOffer::new("haiku-write", crate::card::Price::from_base_units(9));
        offer.description = Some("Writes a haiku.".into());
        file.capabilities = vec![offer];
        let back = RegistrationFile::from_uri(&file.to_data_uri()).unwrap();
        assert_eq!(back.capabilities, file.capabilities);
        file.capabilities[0].description = Some("x".repeat(500));
        let e = RegistrationFile::from_uri(&file.to_data_uri()).unwrap_err().to_string();
        assert!(e.contains("capabilities[0].description"), "{e}");
    }

    #[test]
    fn registration_file_round_trips_through_its_uri() {
        let file = sample();
        let uri = file.to_data_uri();
        assert!(uri.starts_with("data:application/json;base64,"), "{uri}");
        assert_eq!(RegistrationFile::from_uri(&uri).unwrap(), file);
        assert_eq!(file.agent_id_in(31337, Address::repeat_byte(7)), Some(22));
        assert_eq!(file.agent_id_in(1, Address::repeat_byte(7)), None);
    }

    /// The JSON has the standard's field names and the registry as
    /// `eip155:{chainId}:{address}`.
    #[test]
    fn registration_file_speaks_the_standards_names() {
        let value = serde_json::to_value(sample()).unwrap();
        assert_eq!(value["type"], REGISTRATION_TYPE);
        assert_eq!(value["supportedTrust"][0], "reputation");
        assert_eq!(value["x402Support"], false);
        assert_eq!(value["registrations"][0]["agentId"], 22);
        assert_eq!(
            value["registrations"][0]["agentRegistry"],
            format!("eip155:31337:{}", Address::repeat_byte(7))
        );
        assert!(value.get("image").is_none());
    }

    #[test]
    fn from_uri_refuses_other_documents() {
        let card =
            crate::envelope::percent_data_uri(br#"{"type":"other","name":"x","description":""}"#);
        assert!(matches!(RegistrationFile::from_uri(&card), Err(RegistrationError::Type(_))));
        let bad = crate::envelope::percent_data_uri(
            br#"{"type":"https://eips.ethereum.org/EIPS/eip-8004#registration-v1","name":"x","description":"","registrations":[{"agentId":1,"agentRegistry":"solana:1:x"}]}"#,
        );
        let err = RegistrationFile::from_uri(&bad).unwrap_err();
        assert!(err.to_string().contains("eip155"), "{err}");
        assert!(matches!(
            RegistrationFile::from_uri("https://example.com/a.json"),
            Err(RegistrationError::Uri(_))
        ));
    }

    /// The signature recovers to the wallet over the hash the contract
    /// computes (checked against the contract in the workspace tests).
    #[test]
    fn wallet_proof_recovers_to_the_wallet() {
        let wallet = PrivateKeySigner::random();
        let identity = Address::repeat_byte(9);
        let (id, owner, deadline) = (U256::from(3), Address::repeat_byte(1), U256::from(1_000));
        let nonce = U256::from(4);
        let sig = sign_wallet_proof(&wallet, 31337, identity, id, owner, nonce, deadline).unwrap();
        assert_eq!(sig.len(), 65);
        assert!(sig[64] == 27 || sig[64] == 28, "v is 27 or 28");
        let parsed = alloy::primitives::Signature::try_from(sig.as_ref()).unwrap();
        let hash = wallet_proof_hash(31337, identity, id, wallet.address(), owner, nonce, deadline);
        assert_eq!(parsed.recover_address_from_prehash(&hash).unwrap(), wallet.address());
        let other = wallet_proof_hash(
            31337,
            identity,
            id + U256::from(1),
            wallet.address(),
            owner,
            nonce,
            deadline,
        );
        assert_ne!(hash, other, "the agent id is signed");
        let next = wallet_proof_hash(
            31337,
            identity,
            id,
            wallet.address(),
            owner,
            nonce + U256::from(1),
            deadline,
        );
        assert_ne!(hash, next, "the nonce is signed");
    }
}
