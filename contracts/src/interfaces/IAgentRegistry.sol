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
    /// @dev The agent starts Active.
    /// @param agent The agent, who called.
    /// @param metadataURI Where its agent card is.
    event AgentRegistered(address indexed agent, string metadataURI);

    /// @notice An agent now offers `capability` at `price` (new offer or new price).
    /// @dev Emitted by {register}, {addCapability} and {updatePrice}.
    /// @param agent The agent.
    /// @param capability The capability offered.
    /// @param price Its price, in settlement-token base units.
    event CapabilitySet(address indexed agent, bytes32 indexed capability, uint128 price);

    /// @notice An agent no longer offers `capability`.
    /// @dev Emitted by {removeCapability} only; see {AgentLeft}.
    /// @param agent The agent.
    /// @param capability The capability withdrawn.
    event CapabilityRemoved(address indexed agent, bytes32 indexed capability);

    /// @notice An agent changed its metadata URI.
    /// @dev The URI is only stored and emitted; nothing reads what it points at.
    /// @param agent The agent.
    /// @param metadataURI Where its agent card is now.
    event MetadataUpdated(address indexed agent, string metadataURI);

    /// @notice An agent stopped taking work; its offers stay listed but inactive.
    /// @dev The escrow rejects a paused agent as executor of new tasks.
    /// @param agent The agent.
    event AgentPaused(address indexed agent);

    /// @notice A paused agent takes work again.
    /// @dev The agent is Active again with the offers it had.
    /// @param agent The agent.
    event AgentResumed(address indexed agent);

    /// @notice An agent left: it and all its offers are gone.
    /// @dev No {CapabilityRemoved} is emitted for the offers it drops; an indexer
    /// drops them all on this event.
    /// @param agent The agent.
    event AgentLeft(address indexed agent);

    /// @notice An agent linked its ERC-8004 identity (an agent id of
    /// {identityRegistry}) to its offers.
    /// @dev Emitted by {linkIdentity}; a later link replaces it, {leave} drops it.
    /// @param agent The agent, who called.
    /// @param agentId Its agent id in the identity registry.
    event IdentityLinked(address indexed agent, uint256 indexed agentId);

    /// @notice The caller is already registered.
    /// @param agent The caller.
    error AgentRegistryAlreadyRegistered(address agent);

    /// @notice The caller is not registered.
    /// @param agent The caller.
    error AgentRegistryNotRegistered(address agent);

    /// @notice The agent is not in the status this call needs.
    /// @param agent The caller.
    /// @param status Where it stands.
    error AgentRegistryInvalidStatus(address agent, AgentStatus status);

    /// @notice The capability and price lists differ in length.
    /// @param capabilities The number of capabilities.
    /// @param prices The number of prices.
    error AgentRegistryLengthMismatch(uint256 capabilities, uint256 prices);

    /// @notice An agent must offer between one and `max` capabilities.
    /// @param count How many it would offer after the call.
    /// @param max {MAX_CAPABILITIES}.
    error AgentRegistryCapabilityCount(uint256 count, uint256 max);

    /// @notice A capability name is empty (zero).
    error AgentRegistryEmptyCapability();

    /// @notice The agent already offers this capability.
    /// @param capability The capability.
    error AgentRegistryDuplicateCapability(bytes32 capability);

    /// @notice The agent does not offer this capability.
    /// @param capability The capability.
    error AgentRegistryUnknownCapability(bytes32 capability);

    /// @notice A price is zero.
    /// @param capability The capability the zero price was given for.
    error AgentRegistryZeroPrice(bytes32 capability);

    /// @notice The metadata URI is empty.
    error AgentRegistryEmptyMetadata();

    /// @notice A page limit is zero or above {MAX_PAGE}.
    /// @param limit The limit given.
    /// @param max {MAX_PAGE}.
    error AgentRegistryPageLimit(uint256 limit, uint256 max);

    /// @notice This registry was deployed without an identity registry.
    error AgentRegistryNoIdentityRegistry();

    /// @notice The caller neither owns the identity nor is its proven agent wallet.
    /// @param agent The caller.
    /// @param agentId The agent id it tried to link.
    error AgentRegistryNotIdentityController(address agent, uint256 agentId);

    /// @notice Registers the caller as an active agent.
    /// @dev Reverts if the caller is registered, if the lists differ in length or
    /// hold no or more than {MAX_CAPABILITIES} items, if the URI is empty, or if a
    /// capability is zero, repeated or priced at zero. Emits {AgentRegistered}, then
    /// {CapabilitySet} per capability.
    /// @param metadataURI Where the agent card is; non-empty.
    /// @param capabilities The capabilities offered.
    /// @param prices `prices[i]` is the price of `capabilities[i]`, non-zero.
    function register(string calldata metadataURI, bytes32[] calldata capabilities, uint128[] calldata prices)
        external;

    /// @notice Adds a capability to the caller's offers.
    /// @dev Reverts if the caller is not registered, already offers
    /// {MAX_CAPABILITIES} or this capability, or if the capability or price is zero.
    /// Emits {CapabilitySet}.
    /// @param capability The capability, non-zero.
    /// @param price Its price, non-zero.
    function addCapability(bytes32 capability, uint128 price) external;

    /// @notice Changes the caller's price for a capability it offers.
    /// @dev Reverts if the caller is not registered, does not offer the capability,
    /// or the price is zero. Emits {CapabilitySet}.
    /// @param capability The capability.
    /// @param price The new price, non-zero.
    function updatePrice(bytes32 capability, uint128 price) external;

    /// @notice Withdraws a capability; an agent keeps at least one.
    /// @dev Reverts if the caller is not registered, does not offer the capability,
    /// or offers no other. Emits {CapabilityRemoved}.
    /// @param capability The capability.
    function removeCapability(bytes32 capability) external;

    /// @notice Changes the caller's metadata URI.
    /// @dev Reverts if the caller is not registered or the URI is empty. Emits
    /// {MetadataUpdated}.
    /// @param metadataURI Where the agent card is now; non-empty.
    function setMetadataURI(string calldata metadataURI) external;

    /// @notice The caller stops taking work: the escrow rejects it as an executor
    /// for new tasks until it resumes.
    /// @dev Reverts unless the caller is Active. Emits {AgentPaused}.
    function pause() external;

    /// @notice The caller takes work again.
    /// @dev Reverts unless the caller is Paused. Emits {AgentResumed}.
    function resume() external;

    /// @notice The caller leaves the registry; it may register again later.
    /// @dev Reverts if the caller is not registered. Drops every offer (at most
    /// {MAX_CAPABILITIES}). Emits {AgentLeft}.
    function leave() external;

    /// @notice Links the caller's offers to its ERC-8004 identity, so its
    /// reputation can be read by agent id.
    /// @dev Reverts if there is no identity registry, if the caller is not
    /// registered here, with the identity registry's `ERC721NonexistentToken` for an
    /// unknown id, and with {AgentRegistryNotIdentityController} unless the caller
    /// owns the identity or is its agent wallet. Checked when linked only: readers
    /// who need it current check the identity again. Emits {IdentityLinked}.
    /// @param agentId The agent id in {identityRegistry}.
    function linkIdentity(uint256 agentId) external;

    /// @notice The ERC-8004 identity registry agents link to.
    /// @dev Fixed at construction; zero when none was given.
    /// @return The identity registry.
    function identityRegistry() external view returns (address);

    /// @notice The ERC-8004 identity an agent linked.
    /// @dev Agent ids start at 0 in some registries, hence the flag.
    /// @param agent The agent.
    /// @return linked Whether the agent linked one (and has not left since).
    /// @return agentId Its agent id; zero when not linked.
    function identityOf(address agent) external view returns (bool linked, uint256 agentId);

    /// @notice Most capabilities one agent may offer.
    /// @dev Bounds {getAgent} and {leave}, which loop over an agent's offers.
    /// @return The limit (32).
    function MAX_CAPABILITIES() external view returns (uint256);

    /// @notice An agent's record.
    /// @dev Returns at most {MAX_CAPABILITIES} capabilities and prices.
    /// @param agent The agent.
    /// @return The record; status None and empty lists if unknown.
    function getAgent(address agent) external view returns (AgentView memory);

    /// @notice Whether an agent is registered and not paused.
    /// @dev A paused agent is registered but not active.
    /// @param agent The agent.
    /// @return True if it is Active.
    function isActive(address agent) external view returns (bool);

    /// @notice An agent's price for a capability.
    /// @dev Ignores the agent's status; see {offerOf} for whether it can be hired.
    /// @param agent The agent.
    /// @param capability The capability.
    /// @return offered Whether the agent offers it (active or paused).
    /// @return price Its price; zero if not offered.
    function priceOf(address agent, bytes32 capability) external view returns (bool offered, uint128 price);

    /// @notice Whether `agent` may be hired for `capability` and at what price, in one
    /// call, so the escrow can check an executor at creation.
    /// @dev The escrow hires `agent` only if `active` and `0 < price <= amount`.
    /// @param agent The agent.
    /// @param capability The capability.
    /// @return active False unless the agent is registered and not paused.
    /// @return price Zero unless the agent offers the capability.
    function offerOf(address agent, bytes32 capability) external view returns (bool active, uint128 price);

    /// @notice A page of the offers for a capability, active or paused.
    /// @dev The list is unordered (removal swaps the last offer into the gap) and
    /// anyone can grow it: callers page through it and choose off chain; the escrow
    /// checks the chosen executor at creation. Reverts with {AgentRegistryPageLimit}
    /// if `limit` is zero or above {MAX_PAGE}; an `offset` past the end gives an
    /// empty page.
    /// @param capability The capability.
    /// @param offset The position of the first offer to return.
    /// @param limit The most offers to return (1 to {MAX_PAGE}).
    /// @return page Up to `limit` offers from position `offset`.
    /// @return total How many offers the capability has in all.
    function offersFor(bytes32 capability, uint256 offset, uint256 limit)
        external
        view
        returns (OfferView[] memory page, uint256 total);

    /// @notice The largest page {offersFor} returns.
    /// @dev Bounds the gas of one {offersFor} call.
    /// @return The limit (200).
    function MAX_PAGE() external view returns (uint256);

    /// @notice How many agents are registered.
    /// @dev Counts registrations, not offers; an agent that left is not counted.
    /// @return The number of registered agents, active or paused.
    function agentCount() external view returns (uint256);
}
