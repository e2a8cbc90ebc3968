//! EIP-2612 permits for the settlement token, so a sponsor funds a task in one
//! transaction (`createTaskWithPermit`).

use alloy::{
    primitives::{Address, B256, U256},
    signers::{SignerSync, local::PrivateKeySigner},
    sol,
    sol_types::eip712_domain,
};

sol! {
    /// The EIP-2612 `Permit` struct the token verifies.
    #[derive(Debug)]
    struct Permit {
        address owner;
        address spender;
        uint256 value;
        uint256 nonce;
        uint256 deadline;
    }
}

/// The token's EIP-712 domain fields that are not on chain in the permit itself.
#[derive(Debug, Clone)]
pub struct TokenDomain {
    /// EIP-712 name (`"USD Coin"` for MockUSDC and for USDC).
    pub name: String,
    /// EIP-712 version (`"1"` for MockUSDC, `"2"` for Circle's USDC).
    pub version: String,
    /// Chain id.
    pub chain_id: u64,
    /// The token contract.
    pub token: Address,
}

/// A signed permit, split the way `createTaskWithPermit` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermitSignature {
    /// Permit expiry (unix seconds).
    pub deadline: U256,
    /// Recovery id, 27 or 28.
    pub v: u8,
    /// Signature r.
    pub r: B256,
    /// Signature s.
    pub s: B256,
}

/// Signs a permit letting `spender` pull `value` from the signer's balance.
pub fn sign_permit(
    signer: &PrivateKeySigner,
    domain: &TokenDomain,
    spender: Address,
    value: U256,
    nonce: U256,
    deadline: U256,
) -> Result<PermitSignature, alloy::signers::Error> {
    let permit = Permit { owner: signer.address(), spender, value, nonce, deadline };
    let eip712 = eip712_domain! {
        name: domain.name.clone(),
        version: domain.version.clone(),
        chain_id: domain.chain_id,
        verifying_contract: domain.token,
    };
    let sig = signer.sign_typed_data_sync(&permit, &eip712)?;
    Ok(PermitSignature {
        deadline,
        v: 27 + u8::from(sig.v()),
        r: B256::from(sig.r()),
        s: B256::from(sig.s()),
    })
}

/// The `eth_signTypedData_v4` payload of `permit` in the token's `domain`
/// (numbers as decimal strings, as wallets take them).
pub fn typed_data(domain: &alloy::sol_types::Eip712Domain, permit: &Permit) -> serde_json::Value {
    crate::typed_data::payload(
        domain,
        "Permit",
        &[
            ("owner", "address"),
            ("spender", "address"),
            ("value", "uint256"),
            ("nonce", "uint256"),
            ("deadline", "uint256"),
        ],
        serde_json::json!({
            "owner": permit.owner.to_checksum(None),
            "spender": permit.spender.to_checksum(None),
            "value": permit.value.to_string(),
            "nonce": permit.nonce.to_string(),
            "deadline": permit.deadline.to_string(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use alloy::{primitives::address, sol_types::SolStruct};

    use super::*;

    #[test]
    fn signature_recovers_to_the_owner() {
        let signer = PrivateKeySigner::random();
        let domain = TokenDomain {
            name: "USD Coin".into(),
            version: "1".into(),
            chain_id: 31337,
            token: address!("0x00000000000000000000000000000000000000c0"),
        };
        let spender = address!("0x00000000000000000000000000000000000000e5");
        let sig = sign_permit(&signer, &domain, spender, U256::from(5), U256::ZERO, U256::from(9))
            .unwrap();
        assert!(sig.v == 27 || sig.v == 28);
        let permit = Permit {
            owner: signer.address(),
            spender,
            value: U256::from(5),
            nonce: U256::ZERO,
            deadline: U256::from(9),
        };
        let eip712 = eip712_domain! {
            name: "USD Coin", version: "1", chain_id: 31337, verifying_contract: domain.token,
        };
        let digest = permit.eip712_signing_hash(&eip712);
        let rebuilt = alloy::primitives::Signature::new(sig.r.into(), sig.s.into(), sig.v == 28);
        assert_eq!(rebuilt.recover_address_from_prehash(&digest).unwrap(), signer.address());
    }
}
