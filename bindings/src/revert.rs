//! Typed decoding of contract reverts.
//!
//! A revert from any Tessera call may carry an error of the escrow, of the
//! registry, of the ERC-8004 identity and reputation registries, or of the token (ERC-20 errors bubble up through the escrow's
//! SafeERC20 calls). [`decode`] turns the raw revert data into one typed enum so
//! callers match on `TaskEscrowInvalidStatus { .. }` rather than on strings.

use alloy::{primitives::Bytes, sol_types::SolInterface};

use crate::{AgentRegistry, IdentityRegistry, MockUSDC, ReputationRegistry, TaskEscrow};

/// A decoded revert of one of the Tessera contracts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractRevert {
    /// An error declared by the escrow (or inherited: ownership, pausing, reentrancy).
    Escrow(TaskEscrow::TaskEscrowErrors),
    /// An error declared by the agent registry.
    Registry(AgentRegistry::AgentRegistryErrors),
    /// An error of the settlement token (e.g. insufficient allowance).
    Token(MockUSDC::MockUSDCErrors),
    /// An error of the ERC-8004 identity registry (its own, or ERC-721's,
    /// e.g. `ERC721NonexistentToken`, which the registries that call it
    /// pass on).
    Identity(IdentityRegistry::IdentityRegistryErrors),
    /// An error of the ERC-8004 reputation registry.
    Reputation(ReputationRegistry::ReputationRegistryErrors),
}

impl ContractRevert {
    /// Whether the escrow refused a creation because its reference is
    /// taken: the task (or one of a batch) was created before, by this
    /// caller, perhaps by an earlier life of the same process.
    pub fn is_duplicate_reference(&self) -> bool {
        use TaskEscrow::TaskEscrowErrors as E;
        matches!(
            self,
            Self::Escrow(E::TaskEscrowDuplicateReference(_) | E::TaskEscrowBatchDuplicate(_))
        )
    }

    /// Whether the escrow refused a creation for its executor's sake: the
    /// registry does not list it as active and offering the capability at
    /// no more than the amount (it paused, raised its price, dropped the
    /// capability or left). The executor's doing, not the caller's.
    pub fn is_executor_refusal(&self) -> bool {
        use TaskEscrow::TaskEscrowErrors as E;
        matches!(self, Self::Escrow(E::TaskEscrowExecutorNotOffering(_)))
    }

    /// Decodes raw revert data; `None` if no Tessera contract declares it.
    pub fn from_revert_data(data: &[u8]) -> Option<Self> {
        if let Ok(e) = TaskEscrow::TaskEscrowErrors::abi_decode(data) {
            return Some(Self::Escrow(e));
        }
        if let Ok(e) = AgentRegistry::AgentRegistryErrors::abi_decode(data) {
            return Some(Self::Registry(e));
        }
        if let Ok(e) = IdentityRegistry::IdentityRegistryErrors::abi_decode(data) {
            return Some(Self::Identity(e));
        }
        if let Ok(e) = ReputationRegistry::ReputationRegistryErrors::abi_decode(data) {
            return Some(Self::Reputation(e));
        }
        MockUSDC::MockUSDCErrors::abi_decode(data).ok().map(Self::Token)
    }

    /// The error's name, e.g. `TaskEscrowInvalidStatus`.
    pub fn name(&self) -> &'static str {
        let name = match self {
            Self::Escrow(e) => TaskEscrow::TaskEscrowErrors::name_by_selector(e.selector()),
            Self::Registry(e) => AgentRegistry::AgentRegistryErrors::name_by_selector(e.selector()),
            Self::Token(e) => MockUSDC::MockUSDCErrors::name_by_selector(e.selector()),
            Self::Identity(e) => {
                IdentityRegistry::IdentityRegistryErrors::name_by_selector(e.selector())
            }
            Self::Reputation(e) => {
                ReputationRegistry::ReputationRegistryErrors::name_by_selector(e.selector())
            }
        };
        name.expect("a decoded error's selector is one of its interface's")
    }
}

impl std::fmt::Display for ContractRevert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Escrow(e) => write!(f, "TaskEscrow reverted: {e:?}"),
            Self::Registry(e) => write!(f, "AgentRegistry reverted: {e:?}"),
            Self::Token(e) => write!(f, "token reverted: {e:?}"),
            Self::Identity(e) => write!(f, "IdentityRegistry reverted: {e:?}"),
            Self::Reputation(e) => write!(f, "ReputationRegistry reverted: {e:?}"),
        }
    }
}

/// Decodes the revert carried by a contract call error, if it is one of ours.
pub fn decode(err: &alloy::contract::Error) -> Option<ContractRevert> {
    err.as_revert_data().and_then(|data: Bytes| ContractRevert::from_revert_data(&data))
}

#[cfg(test)]
mod tests {
    use alloy::{
        primitives::{U256, address},
        sol_types::SolError,
    };

    use super::*;
    use crate::TaskEscrow::TaskEscrowErrors;

    #[test]
    fn decodes_escrow_errors_with_arguments() {
        let err = TaskEscrow::TaskEscrowInvalidStatus { taskId: U256::from(7), status: 3 };
        let decoded = ContractRevert::from_revert_data(&err.abi_encode()).unwrap();
        assert_eq!(decoded, ContractRevert::Escrow(TaskEscrowErrors::TaskEscrowInvalidStatus(err)));
        assert_eq!(decoded.name(), "TaskEscrowInvalidStatus");
    }

    #[test]
    fn decodes_registry_and_token_errors() {
        let reg = AgentRegistry::AgentRegistryNotRegistered {
            agent: address!("0x00000000000000000000000000000000000000aa"),
        };
        let decoded = ContractRevert::from_revert_data(&reg.abi_encode()).unwrap();
        assert!(matches!(decoded, ContractRevert::Registry(_)));
        assert_eq!(decoded.name(), "AgentRegistryNotRegistered");
        let tok = MockUSDC::ERC20InsufficientAllowance {
            spender: address!("0x00000000000000000000000000000000000000bb"),
            allowance: U256::ZERO,
            needed: U256::from(1),
        };
        let decoded = ContractRevert::from_revert_data(&tok.abi_encode()).unwrap();
        assert!(matches!(decoded, ContractRevert::Token(_)));
        assert_eq!(decoded.name(), "ERC20InsufficientAllowance");
    }

    #[test]
    fn decodes_erc8004_errors() {
        let own = ReputationRegistry::ReputationRegistrySelfFeedback {
            agentId: U256::from(3),
            caller: address!("0x00000000000000000000000000000000000000cc"),
        };
        let decoded = ContractRevert::from_revert_data(&own.abi_encode()).unwrap();
        assert!(matches!(decoded, ContractRevert::Reputation(_)));
        assert_eq!(decoded.name(), "ReputationRegistrySelfFeedback");
        let gone = IdentityRegistry::ERC721NonexistentToken { tokenId: U256::from(9) };
        let decoded = ContractRevert::from_revert_data(&gone.abi_encode()).unwrap();
        assert!(matches!(decoded, ContractRevert::Identity(_)));
        assert_eq!(decoded.name(), "ERC721NonexistentToken");
    }

    #[test]
    fn an_executor_not_offering_is_the_executors_refusal_and_nothing_else_is() {
        let err = TaskEscrow::TaskEscrowExecutorNotOffering {
            executor: address!("0x00000000000000000000000000000000000000aa"),
            capability: Default::default(),
            amount: 5,
        };
        let decoded = ContractRevert::from_revert_data(&err.abi_encode()).unwrap();
        assert!(decoded.is_executor_refusal());
        assert!(!decoded.is_duplicate_reference());
        let other = TaskEscrow::TaskEscrowZeroAmount {};
        let decoded = ContractRevert::from_revert_data(&other.abi_encode()).unwrap();
        assert!(!decoded.is_executor_refusal());
    }

    #[test]
    fn unknown_data_is_none() {
        assert_eq!(ContractRevert::from_revert_data(&[0xde, 0xad, 0xbe, 0xef]), None);
        assert_eq!(ContractRevert::from_revert_data(&[]), None);
    }
}
