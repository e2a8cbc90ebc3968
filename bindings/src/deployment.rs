//! The deployment record: where the contracts live and from which block to
//! read their events. Written by `anvil-scripts` (or any deploy), read by every
//! service.

use std::path::Path;

use alloy::primitives::Address;
use serde::{Deserialize, Serialize};

/// Where one deployment of the Tessera contracts lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deployment {
    /// Chain id the contracts are on.
    pub chain_id: u64,
    /// Block of the first deployment transaction: indexers start here.
    pub deploy_block: u64,
    /// The escrow.
    pub task_escrow: Address,
    /// The agent registry.
    pub agent_registry: Address,
    /// The settlement token (MockUSDC on local chains).
    pub token: Address,
    /// Owner of the escrow (pauses, rotates arbiters).
    pub owner: Address,
    /// Arbiter at deployment time.
    pub arbiter: Address,
    /// Appeal arbiter at deployment time.
    pub appeal_arbiter: Address,
    /// The ERC-8004 identity registry agents register their identity in
    /// (absent from records written before it was deployed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_registry: Option<Address>,
    /// The ERC-8004 reputation registry bound to [`Self::identity_registry`]
    /// (absent from records written before it was deployed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reputation_registry: Option<Address>,
    /// The JSON-RPC endpoint the contracts were deployed through, when
    /// recorded (`tessera chain`, `tessera deploy`): a service given no
    /// `--rpc-url` connects there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_url: Option<String>,
    /// The chain's websocket endpoint, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_url: Option<String>,
}

/// Why a deployment record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    /// The file could not be read or written.
    #[error("deployment file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid deployment record.
    #[error("deployment file {path} is not a valid deployment record: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The chain answering is not the one the record was deployed on.
    #[error(
        "the deployment record is for chain id {expected} but the RPC endpoint serves chain id {actual}: point --rpc-url at chain {expected} or use that chain's deployment file"
    )]
    WrongChain {
        /// The record's chain id.
        expected: u64,
        /// The endpoint's chain id.
        actual: u64,
    },
}

impl Deployment {
    /// Reads a record from a JSON file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, DeploymentError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| DeploymentError::Io { path: path.display().to_string(), source })?;
        serde_json::from_str(&text)
            .map_err(|source| DeploymentError::Parse { path: path.display().to_string(), source })
    }

    /// Insists the chain answering (`actual`, its `eth_chainId`) is the one
    /// this record was deployed on: a service must not send or read against
    /// another chain's addresses.
    pub fn check_chain(&self, actual: u64) -> Result<(), DeploymentError> {
        if actual == self.chain_id {
            Ok(())
        } else {
            Err(DeploymentError::WrongChain { expected: self.chain_id, actual })
        }
    }

    /// Writes the record as pretty JSON, atomically (temp file, then rename), so
    /// a reader never sees half a file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), DeploymentError> {
        let path = path.as_ref();
        let io = |source| DeploymentError::Io { path: path.display().to_string(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("a deployment always serializes");
        std::fs::write(&tmp, text + "\n").map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Deployment {
        Deployment {
            chain_id: 31337,
            deploy_block: 1,
            task_escrow: Address::repeat_byte(1),
            agent_registry: Address::repeat_byte(2),
            token: Address::repeat_byte(3),
            owner: Address::repeat_byte(4),
            arbiter: Address::repeat_byte(5),
            appeal_arbiter: Address::repeat_byte(6),
            identity_registry: Some(Address::repeat_byte(7)),
            reputation_registry: Some(Address::repeat_byte(8)),
            rpc_url: Some("http://127.0.0.1:8545/".into()),
            ws_url: None,
        }
    }

    #[test]
    fn save_then_load_round_trips() {
        let dir = std::env::temp_dir().join(format!("tessera-deploy-{}", std::process::id()));
        let path = dir.join("nested/deployment.json");
        sample().save(&path).unwrap();
        assert_eq!(Deployment::load(&path).unwrap(), sample());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A record written before the ERC-8004 registries were deployed still
    /// reads, without them; one naming them round-trips them.
    #[test]
    fn the_registries_are_optional_in_a_record() {
        let mut old = serde_json::to_value(sample()).unwrap();
        let map = old.as_object_mut().unwrap();
        assert_eq!(
            map.remove("identityRegistry"),
            Some(serde_json::json!(Address::repeat_byte(7)))
        );
        assert!(map.remove("reputationRegistry").is_some());
        let read: Deployment = serde_json::from_value(old).unwrap();
        assert_eq!((read.identity_registry, read.reputation_registry), (None, None));
        let written = serde_json::to_value(&read).unwrap();
        assert!(written.get("identityRegistry").is_none(), "{written}");
    }

    #[test]
    fn check_chain_refuses_another_chain() {
        sample().check_chain(31337).unwrap();
        let err = sample().check_chain(84532).unwrap_err();
        assert!(matches!(err, DeploymentError::WrongChain { expected: 31337, actual: 84532 }));
        assert!(err.to_string().contains("chain id 31337"), "{err}");
    }

    #[test]
    fn load_reports_bad_files() {
        let missing = Deployment::load("/nonexistent/deployment.json").unwrap_err();
        assert!(matches!(missing, DeploymentError::Io { .. }), "{missing}");
        let dir = std::env::temp_dir().join(format!("tessera-deploy-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.json");
        std::fs::write(&path, r#"{"chainId": 1}"#).unwrap();
        let err = Deployment::load(&path).unwrap_err();
        assert!(err.to_string().contains("not a valid deployment record"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
