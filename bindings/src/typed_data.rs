//! `eth_signTypedData_v4` payloads, as a browser wallet takes them, and the
//! decimal-string form amounts and nonces travel in as JSON (so no JSON
//! number loses precision). One builder for every EIP-712 message the
//! project asks a wallet to sign: a grant ([`crate::grant::typed_data`])
//! and an EIP-2612 permit ([`crate::permit::typed_data`]).

use alloy::sol_types::Eip712Domain;
use serde_json::{Value, json};

/// The `eth_signTypedData_v4` payload of a `primary` struct with `fields`
/// (`(name, solidity type)`, in the struct's order) and its `message`, in
/// `domain` (name, version, chain id and verifying contract, the fields
/// the project's domains have).
pub fn payload(
    domain: &Eip712Domain,
    primary: &str,
    fields: &[(&str, &str)],
    message: Value,
) -> Value {
    let fields: Vec<Value> =
        fields.iter().map(|(name, ty)| json!({"name": name, "type": ty})).collect();
    json!({
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            primary: fields,
        },
        "primaryType": primary,
        "domain": {
            "name": domain.name.as_deref().unwrap_or_default(),
            "version": domain.version.as_deref().unwrap_or_default(),
            "chainId": domain.chain_id.map(|c| c.saturating_to::<u64>()).unwrap_or_default(),
            "verifyingContract": domain.verifying_contract.map(|a| a.to_checksum(None)),
        },
        "message": message,
    })
}

/// Serde for a `U256` as a decimal string (`#[serde(with = "…::dec_u256")]`).
pub mod dec_u256 {
    use alloy::primitives::U256;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes `v` as a decimal string.
    pub fn serialize<S: Serializer>(v: &U256, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Reads a decimal string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<U256, D::Error> {
        let s = String::deserialize(d)?;
        U256::from_str_radix(&s, 10)
            .map_err(|_| D::Error::custom(format!("{s:?} is not a decimal integer")))
    }
}

/// Serde for a `u128` amount as a decimal string (`#[serde(with = "…::dec_u128")]`).
pub mod dec_u128 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes `v` as a decimal string.
    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Reads a decimal string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| D::Error::custom(format!("{s:?} is not a decimal amount in base units")))
    }
}

#[cfg(test)]
mod tests {
    use alloy::{
        primitives::{U256, address},
        sol_types::eip712_domain,
    };
    use serde::{Deserialize, Serialize};

    use super::*;

    #[test]
    fn a_payload_names_its_domain_and_its_struct_in_order() {
        let domain = eip712_domain! {
            name: "Name",
            version: "2",
            chain_id: 31337,
            verifying_contract: address!("0x00000000000000000000000000000000000000aa"),
        };
        let p = payload(&domain, "Thing", &[("b", "uint256"), ("a", "address")], json!({"b": "1"}));
        assert_eq!(p["primaryType"], "Thing");
        assert_eq!(p["types"]["Thing"][0]["name"], "b");
        assert_eq!(p["types"]["Thing"][1]["type"], "address");
        assert_eq!(p["domain"]["chainId"], 31337);
        assert_eq!(p["domain"]["version"], "2");
        assert_eq!(p["domain"]["verifyingContract"], "0x00000000000000000000000000000000000000AA");
        assert_eq!(p["message"]["b"], "1");
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Amounts {
        #[serde(with = "dec_u256")]
        big: U256,
        #[serde(with = "dec_u128")]
        small: u128,
    }

    #[test]
    fn amounts_travel_as_decimal_strings_and_refuse_anything_else() {
        let a = Amounts { big: U256::MAX, small: u128::MAX };
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["small"], u128::MAX.to_string());
        assert_eq!(serde_json::from_value::<Amounts>(json).unwrap(), a);
        let err = serde_json::from_value::<Amounts>(json!({"big": "0x10", "small": "1"}));
        assert!(err.unwrap_err().to_string().contains("is not a decimal integer"));
        let err = serde_json::from_value::<Amounts>(json!({"big": "1", "small": "-1"}));
        assert!(err.unwrap_err().to_string().contains("is not a decimal amount"));
    }
}
