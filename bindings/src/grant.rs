//! A sponsor's grant: the EIP-712 budget for one plan that lets a named
//! operator create that plan's tasks with the sponsor as funder
//! (`TaskEscrow.createWithGrants`). The escrow enforces it: at most `budget`
//! in all, until `valid_until`, for `plan_id` only, by `operator` only, on
//! this chain and this escrow only, until the sponsor revokes it.
//!
//! This module is the one description of the grant off chain: its terms as
//! JSON ([`GrantTerms`]), the digest the escrow checks ([`digest`]), the
//! `eth_signTypedData_v4` payload a browser wallet signs ([`typed_data`]),
//! a local signature ([`sign`]) and the ECDSA check a server makes before it
//! spends gas on a grant ([`recover`]).

use alloy::{
    primitives::{Address, B256, Bytes, U256},
    signers::{Signature, SignerSync, local::PrivateKeySigner},
    sol_types::{Eip712Domain, SolStruct, eip712_domain},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ITaskEscrow;

/// The escrow's EIP-712 domain name.
pub const DOMAIN_NAME: &str = "Tessera TaskEscrow";
/// The escrow's EIP-712 domain version.
pub const DOMAIN_VERSION: &str = "1";

/// Why a grant or its signature is refused off chain.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GrantError {
    /// The signature is not 65 bytes of a valid ECDSA signature.
    #[error("the grant signature is not a 65-byte ECDSA signature")]
    Malformed,
    /// The signature recovers to another address than the sponsor.
    #[error("the grant is signed by {signer}, not by its sponsor {sponsor}")]
    WrongSigner {
        /// Who signed.
        signer: Address,
        /// Who should have.
        sponsor: Address,
    },
}

/// A grant's terms as they travel as JSON (amounts in USDC base units, as
/// decimal strings, so no JSON number loses precision).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantTerms {
    /// Funds the tasks and gets every refund.
    pub sponsor: Address,
    /// The plan every task created under the grant belongs to.
    pub plan_id: B256,
    /// The one caller that may spend the grant.
    pub operator: Address,
    /// The most the grant may ever fund, in base units.
    #[serde(with = "crate::typed_data::dec_u128")]
    pub budget: u128,
    /// Last second (unix) the grant may fund a task.
    pub valid_until: u64,
    /// Tells apart grants that are otherwise the same.
    #[serde(with = "crate::typed_data::dec_u256")]
    pub nonce: U256,
}

/// A grant with its sponsor's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedGrant {
    /// The terms signed.
    pub terms: GrantTerms,
    /// 65-byte ECDSA (`r ‖ s ‖ v`), or what the sponsor's ERC-1271 contract accepts.
    pub signature: Bytes,
}

impl GrantTerms {
    /// The terms as the escrow's ABI struct.
    pub fn to_sol(&self) -> ITaskEscrow::Grant {
        ITaskEscrow::Grant {
            sponsor: self.sponsor,
            planId: self.plan_id,
            operator: self.operator,
            budget: self.budget,
            validUntil: alloy::primitives::aliases::U40::saturating_from(self.valid_until),
            nonce: self.nonce,
        }
    }
}

/// The escrow's EIP-712 domain on `chain_id` at `escrow`.
pub fn domain(chain_id: u64, escrow: Address) -> Eip712Domain {
    eip712_domain! {
        name: DOMAIN_NAME,
        version: DOMAIN_VERSION,
        chain_id: chain_id,
        verifying_contract: escrow,
    }
}

/// The digest the sponsor signs and the escrow checks (`grantDigest`).
pub fn digest(chain_id: u64, escrow: Address, terms: &GrantTerms) -> B256 {
    terms.to_sol().eip712_signing_hash(&domain(chain_id, escrow))
}

/// The task id of the mark of `sponsor`'s grant `digest` (the escrow's
/// `grantMarkId`): `keccak256(abi.encode(sponsor, digest, 1))`, three words
/// where every other task id hashes two, so only the grant's first use,
/// creating first a task referenced by the digest, makes it.
pub fn mark_id(sponsor: Address, digest: B256) -> U256 {
    use alloy::sol_types::SolValue;
    U256::from_be_bytes(
        alloy::primitives::keccak256((sponsor, digest, U256::from(1)).abi_encode()).0,
    )
}

/// Signs `terms` with a local key (the CLI's sponsor key; never sent anywhere).
pub fn sign(
    signer: &PrivateKeySigner,
    chain_id: u64,
    escrow: Address,
    terms: &GrantTerms,
) -> Result<Bytes, alloy::signers::Error> {
    let sig = signer.sign_hash_sync(&digest(chain_id, escrow, terms))?;
    Ok(Bytes::from(sig.as_bytes().to_vec()))
}

/// Checks an ECDSA signature of `terms` off chain: the address it recovers
/// to must be the sponsor. (A contract sponsor's ERC-1271 signature is for
/// the escrow to judge; see [`is_ecdsa`].)
pub fn recover(chain_id: u64, escrow: Address, signed: &SignedGrant) -> Result<(), GrantError> {
    let sig = Signature::try_from(signed.signature.as_ref()).map_err(|_| GrantError::Malformed)?;
    let signer = sig
        .recover_address_from_prehash(&digest(chain_id, escrow, &signed.terms))
        .map_err(|_| GrantError::Malformed)?;
    if signer != signed.terms.sponsor {
        return Err(GrantError::WrongSigner { signer, sponsor: signed.terms.sponsor });
    }
    Ok(())
}

/// Whether `signature` has the shape of an ECDSA signature (65 bytes).
pub fn is_ecdsa(signature: &[u8]) -> bool {
    signature.len() == 65
}

/// The `eth_signTypedData_v4` payload for `terms` (numbers as decimal
/// strings, as wallets take them).
pub fn typed_data(chain_id: u64, escrow: Address, terms: &GrantTerms) -> Value {
    crate::typed_data::payload(
        &domain(chain_id, escrow),
        "Grant",
        &[
            ("sponsor", "address"),
            ("planId", "bytes32"),
            ("operator", "address"),
            ("budget", "uint128"),
            ("validUntil", "uint40"),
            ("nonce", "uint256"),
        ],
        json!({
            "sponsor": terms.sponsor.to_checksum(None),
            "planId": terms.plan_id.to_string(),
            "operator": terms.operator.to_checksum(None),
            "budget": terms.budget.to_string(),
            "validUntil": terms.valid_until.to_string(),
            "nonce": terms.nonce.to_string(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use alloy::primitives::address;

    use super::*;

    fn terms(sponsor: Address) -> GrantTerms {
        GrantTerms {
            sponsor,
            plan_id: B256::repeat_byte(0x11),
            operator: address!("0x00000000000000000000000000000000000000aa"),
            budget: 5_000_000,
            valid_until: 1_900_000_000,
            nonce: U256::from(7),
        }
    }

    #[test]
    fn a_local_signature_recovers_to_the_sponsor_and_nobody_else() {
        let key = PrivateKeySigner::random();
        let escrow = address!("0x00000000000000000000000000000000000000e5");
        let t = terms(key.address());
        let sig = sign(&key, 31337, escrow, &t).unwrap();
        let signed = SignedGrant { terms: t.clone(), signature: sig.clone() };
        recover(31337, escrow, &signed).unwrap();
        // Another chain, another escrow, other terms: another digest, so the
        // same signature recovers to someone else.
        assert!(matches!(recover(1, escrow, &signed), Err(GrantError::WrongSigner { .. })));
        let other_escrow = address!("0x00000000000000000000000000000000000000e6");
        assert!(matches!(
            recover(31337, other_escrow, &signed),
            Err(GrantError::WrongSigner { .. })
        ));
        let mut more = signed;
        more.terms.budget += 1;
        assert!(matches!(recover(31337, escrow, &more), Err(GrantError::WrongSigner { .. })));
        let short = SignedGrant { terms: t, signature: Bytes::from(sig[..64].to_vec()) };
        assert_eq!(recover(31337, escrow, &short), Err(GrantError::Malformed));
    }

    #[test]
    fn terms_travel_as_json_with_amounts_as_strings() {
        let t = terms(Address::repeat_byte(3));
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["budget"], "5000000");
        assert_eq!(v["nonce"], "7");
        assert_eq!(serde_json::from_value::<GrantTerms>(v.clone()).unwrap(), t);
        let mut bad = v;
        bad["budget"] = json!("5 USDC");
        let err = serde_json::from_value::<GrantTerms>(bad).unwrap_err().to_string();
        assert!(err.contains("not a decimal amount"), "{err}");
    }

    #[test]
    fn typed_data_names_the_fields_the_escrow_hashes() {
        let t = terms(Address::repeat_byte(3));
        let td = typed_data(31337, Address::repeat_byte(9), &t);
        let fields: Vec<&str> = td["types"]["Grant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(fields, ["sponsor", "planId", "operator", "budget", "validUntil", "nonce"]);
        // The type string the escrow's GRANT_TYPEHASH is built from.
        assert_eq!(
            ITaskEscrow::Grant::eip712_encode_type(),
            "Grant(address sponsor,bytes32 planId,address operator,uint128 budget,uint40 validUntil,uint256 nonce)"
        );
        assert_eq!(td["message"]["budget"], "5000000");
        assert_eq!(td["domain"]["name"], DOMAIN_NAME);
    }
}
