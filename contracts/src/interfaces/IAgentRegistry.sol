// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IAgentRegistry
/// @notice A permissionless directory of executor agents. An agent advertises
/// capabilities (short names such as "summarize", as bytes32) with a price each
/// in settlement-token base units, and a metadata URI pointing at its agent card.
/// Anyone can register, undercut a price and be picked.
///
/// @dev Every change emits an event, so an indexer can answer the same queries
/// as the views without calling them (see contracts/README.md).
interface IAgentRegistry {
    /// @notice An agent's standing. `None`: never registered, or left.
    enum AgentStatus {
        None,
        Active,
        Paused
    }

    /// @notice One agent as the views return it.
    struct AgentView {
        AgentStatus status;
        string metadataURI;
        bytes32[] capabilities;
        uint128[] prices; // prices[i] is the price of capabilities[i]
    }

    /// @notice One offer of a capability as {offersFor} returns it.
    struct OfferView {
        address agent;
        uint128 price;
        bool active; // registered and not paused
    }

    /// @notice An agent registered. {CapabilitySet} follows for each capability.
    event AgentRegistered(address indexed agent, string metadataURI);
    /// @notice An agent now offers `capability` at `price` (new offer or new price).
    event CapabilitySet(address indexed agent, bytes32 indexed capability, uint128 price);
    /// @notice An agent no longer offers `capability`.
    event CapabilityRemoved(address indexed agent, bytes32 indexed capability);
    /// @notice An agent changed its metadata URI.
    event MetadataUpdated(address indexed agent, string metadataURI);
    /// @notice An agent stopped taking work; its offers stay listed but inactive.
    event AgentPaused(address indexed agent);
    /// @notice A paused agent takes work again.
    event AgentResumed(address indexed agent);
    /// @notice An agent left: it and all its offers are gone.
    event AgentLeft(address indexed agent);

    /// @notice The caller is already registered.
    error AgentRegistryAlreadyRegistered(address agent);
    /// @notice The caller is not registered.
    error AgentRegistryNotRegistered(address agent);
    /// @notice The agent is not in the status this call needs.
    error AgentRegistryInvalidStatus(address agent, AgentStatus status);
    /// @notice The capability and price lists differ in length.
    error AgentRegistryLengthMismatch(uint256 capabilities, uint256 prices);
    /// @notice An agent must offer between one and `max` capabilities.
    error AgentRegistryCapabilityCount(uint256 count, uint256 max);
    /// @notice A capability name is empty (zero).
    error AgentRegistryEmptyCapability();
    /// @notice The agent already offers this capability.
    error AgentRegistryDuplicateCapability(bytes32 capability);
    /// @notice The agent does not offer this capability.
    error AgentRegistryUnknownCapability(bytes32 capability);
    /// @notice A price is zero.
    error AgentRegistryZeroPrice(bytes32 capability);
    /// @notice The metadata URI is empty.
    error AgentRegistryEmptyMetadata();
    /// @notice A page limit is zero or above {MAX_PAGE}.
    error AgentRegistryPageLimit(uint256 limit, uint256 max);

    /// @notice Registers the caller as an active agent.
    function register(string calldata metadataURI, bytes32[] calldata capabilities, uint128[] calldata prices)
        external;

    /// @notice Adds a capability to the caller's offers.
    function addCapability(bytes32 capability, uint128 price) external;

    /// @notice Changes the caller's price for a capability it offers.
    function updatePrice(bytes32 capability, uint128 price) external;

    /// @notice Withdraws a capability; an agent keeps at least one.
    function removeCapability(bytes32 capability) external;

    /// @notice Changes the caller's metadata URI.
    function setMetadataURI(string calldata metadataURI) external;

    /// @notice The caller stops taking work.
    function pause() external;

    /// @notice The caller takes work again.
    function resume() external;

    /// @notice The caller leaves the registry; it may register again later.
    function leave() external;

    /// @notice Most capabilities one agent may offer.
    function MAX_CAPABILITIES() external view returns (uint256);

    /// @notice An agent's record (status None and empty lists if unknown).
    function getAgent(address agent) external view returns (AgentView memory);

    /// @notice Whether `agent` is registered and not paused.
    function isActive(address agent) external view returns (bool);

    /// @notice The agent's price for a capability; `offered` is false if it has none.
    function priceOf(address agent, bytes32 capability) external view returns (bool offered, uint128 price);

    /// @notice Whether `agent` may be hired for `capability` and at what price: `active` is
    /// false unless it is registered and not paused, `price` is zero unless it offers
    /// the capability. One call, so the escrow can check an executor at creation.
    function offerOf(address agent, bytes32 capability) external view returns (bool active, uint128 price);

    /// @notice At most `limit` (≤ {MAX_PAGE}) of the offers for `capability` from
    /// position `offset`, active or paused, and how many there are in all. The list
    /// is unordered and anyone can grow it: callers page through it and choose off
    /// chain; the escrow checks the chosen executor at creation.
    function offersFor(bytes32 capability, uint256 offset, uint256 limit)
        external
        view
        returns (OfferView[] memory page, uint256 total);

    /// @notice The largest page {offersFor} returns.
    function MAX_PAGE() external view returns (uint256);

    /// @notice How many agents are registered.
    function agentCount() external view returns (uint256);
}
