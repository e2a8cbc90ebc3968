// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";

import {IAgentRegistry} from "./interfaces/IAgentRegistry.sol";
import {IIdentityRegistry} from "./interfaces/IIdentityRegistry.sol";

/// @title AgentRegistry
/// @notice See {IAgentRegistry}.
///
/// @dev Two indexes are kept in step: each agent's capability list and each
/// capability's agent list, both with 1-based positions so removal is a
/// swap-and-pop in O(1). `_offers[agent][capability]` holds the price and both
/// positions in one slot.
contract AgentRegistry is IAgentRegistry {
    /// @inheritdoc IAgentRegistry
    uint256 public constant override MAX_CAPABILITIES = 32;
    /// @inheritdoc IAgentRegistry
    uint256 public constant override MAX_PAGE = 200;

    /// @dev One slot: price (128) | position in the agent's list (64) | position in the capability's list
    /// (64).
    struct Offer {
        uint128 price;
        uint64 capPos; // 1-based index into _capabilitiesOf[agent]; 0 = not offered
        uint64 agentPos; // 1-based index into _agentsFor[capability]
    }

    struct Agent {
        AgentStatus status;
        string metadataURI;
        bytes32[] capabilities;
    }

    mapping(address agent => Agent) private _agents;
    mapping(address agent => mapping(bytes32 capability => Offer)) private _offers;
    mapping(bytes32 capability => address[]) private _agentsFor;
    uint256 private _agentCount;
    /// @dev The linked agent id plus one, so that zero means not linked.
    mapping(address agent => uint256 agentIdPlusOne) private _identities;

    /// @dev The ERC-8004 identity registry; zero when none.
    address private immutable _IDENTITY_REGISTRY;

    /// @param identityRegistry_ The ERC-8004 identity registry agents link to; zero
    /// disables {linkIdentity}.
    constructor(address identityRegistry_) {
        _IDENTITY_REGISTRY = identityRegistry_;
    }

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IAgentRegistry
    function register(string calldata metadataURI, bytes32[] calldata capabilities, uint128[] calldata prices)
        external
        override
    {
        Agent storage a = _agents[msg.sender];
        if (a.status != AgentStatus.None) revert AgentRegistryAlreadyRegistered(msg.sender);
        if (capabilities.length != prices.length) {
            revert AgentRegistryLengthMismatch(capabilities.length, prices.length);
        }
        if (capabilities.length == 0 || capabilities.length > MAX_CAPABILITIES) {
            revert AgentRegistryCapabilityCount(capabilities.length, MAX_CAPABILITIES);
        }
        if (bytes(metadataURI).length == 0) revert AgentRegistryEmptyMetadata();

        a.status = AgentStatus.Active;
        a.metadataURI = metadataURI;
        _agentCount += 1;
        emit AgentRegistered(msg.sender, metadataURI);
        for (uint256 i; i < capabilities.length; ++i) {
            _addOffer(msg.sender, a, capabilities[i], prices[i]);
        }
    }

    /// @inheritdoc IAgentRegistry
    function addCapability(bytes32 capability, uint128 price) external override {
        Agent storage a = _registered(msg.sender);
        if (a.capabilities.length >= MAX_CAPABILITIES) {
            revert AgentRegistryCapabilityCount(a.capabilities.length + 1, MAX_CAPABILITIES);
        }
        _addOffer(msg.sender, a, capability, price);
    }

    /// @inheritdoc IAgentRegistry
    function updatePrice(bytes32 capability, uint128 price) external override {
        _registered(msg.sender);
        Offer storage o = _offers[msg.sender][capability];
        if (o.capPos == 0) revert AgentRegistryUnknownCapability(capability);
        if (price == 0) revert AgentRegistryZeroPrice(capability);
        o.price = price;
        emit CapabilitySet(msg.sender, capability, price);
    }

    /// @inheritdoc IAgentRegistry
    function removeCapability(bytes32 capability) external override {
        Agent storage a = _registered(msg.sender);
        if (_offers[msg.sender][capability].capPos == 0) revert AgentRegistryUnknownCapability(capability);
        if (a.capabilities.length == 1) revert AgentRegistryCapabilityCount(0, MAX_CAPABILITIES);
        _removeOffer(msg.sender, a, capability);
        emit CapabilityRemoved(msg.sender, capability);
    }

    /// @inheritdoc IAgentRegistry
    function setMetadataURI(string calldata metadataURI) external override {
        Agent storage a = _registered(msg.sender);
        if (bytes(metadataURI).length == 0) revert AgentRegistryEmptyMetadata();
        a.metadataURI = metadataURI;
        emit MetadataUpdated(msg.sender, metadataURI);
    }

    /// @inheritdoc IAgentRegistry
    function pause() external override {
        Agent storage a = _registered(msg.sender);
        if (a.status != AgentStatus.Active) revert AgentRegistryInvalidStatus(msg.sender, a.status);
        a.status = AgentStatus.Paused;
        emit AgentPaused(msg.sender);
    }

    /// @inheritdoc IAgentRegistry
    function resume() external override {
        Agent storage a = _registered(msg.sender);
        if (a.status != AgentStatus.Paused) revert AgentRegistryInvalidStatus(msg.sender, a.status);
        a.status = AgentStatus.Active;
        emit AgentResumed(msg.sender);
    }

    /// @inheritdoc IAgentRegistry
    function leave() external override {
        Agent storage a = _registered(msg.sender);
        while (a.capabilities.length != 0) {
            _removeOffer(msg.sender, a, a.capabilities[a.capabilities.length - 1]);
        }
        delete _agents[msg.sender];
        if (_identities[msg.sender] != 0) delete _identities[msg.sender];
        _agentCount -= 1;
        emit AgentLeft(msg.sender);
    }

    /// @inheritdoc IAgentRegistry
    function linkIdentity(uint256 agentId) external override {
        if (_IDENTITY_REGISTRY == address(0)) revert AgentRegistryNoIdentityRegistry();
        _registered(msg.sender);
        if (
            IERC721(_IDENTITY_REGISTRY).ownerOf(agentId) != msg.sender
                && IIdentityRegistry(_IDENTITY_REGISTRY).getAgentWallet(agentId) != msg.sender
        ) revert AgentRegistryNotIdentityController(msg.sender, agentId);
        _identities[msg.sender] = agentId + 1;
        emit IdentityLinked(msg.sender, agentId);
    }

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IAgentRegistry
    function identityRegistry() external view override returns (address) {
        return _IDENTITY_REGISTRY;
    }

    /// @inheritdoc IAgentRegistry
    function identityOf(address agent) external view override returns (bool linked, uint256 agentId) {
        uint256 stored = _identities[agent];
        if (stored == 0) return (false, 0);
        return (true, stored - 1);
    }

    /// @inheritdoc IAgentRegistry
    function getAgent(address agent) external view override returns (AgentView memory v) {
        Agent storage a = _agents[agent];
        v.status = a.status;
        v.metadataURI = a.metadataURI;
        v.capabilities = a.capabilities;
        v.prices = new uint128[](a.capabilities.length);
        for (uint256 i; i < a.capabilities.length; ++i) {
            v.prices[i] = _offers[agent][a.capabilities[i]].price;
        }
    }

    /// @inheritdoc IAgentRegistry
    function isActive(address agent) external view override returns (bool) {
        return _agents[agent].status == AgentStatus.Active;
    }

    /// @inheritdoc IAgentRegistry
    function priceOf(address agent, bytes32 capability)
        external
        view
        override
        returns (bool offered, uint128 price)
    {
        Offer storage o = _offers[agent][capability];
        return (o.capPos != 0, o.price);
    }

    /// @inheritdoc IAgentRegistry
    function offerOf(address agent, bytes32 capability)
        external
        view
        override
        returns (bool active, uint128 price)
    {
        return (_agents[agent].status == AgentStatus.Active, _offers[agent][capability].price);
    }

    /// @inheritdoc IAgentRegistry
    function offersFor(bytes32 capability, uint256 offset, uint256 limit)
        external
        view
        override
        returns (OfferView[] memory page, uint256 total)
    {
        if (limit == 0 || limit > MAX_PAGE) revert AgentRegistryPageLimit(limit, MAX_PAGE);
        address[] storage list = _agentsFor[capability];
        total = list.length;
        uint256 end = offset >= total ? offset : total;
        if (end - offset > limit) end = offset + limit;
        page = new OfferView[](end - offset);
        for (uint256 i; i < page.length; ++i) {
            address agent = list[offset + i];
            page[i] = OfferView({
                agent: agent,
                price: _offers[agent][capability].price,
                active: _agents[agent].status == AgentStatus.Active
            });
        }
    }

    /// @inheritdoc IAgentRegistry
    function agentCount() external view override returns (uint256) {
        return _agentCount;
    }

    /*//////////////////////////////////////////////////////////////
                            INTERNALS
    //////////////////////////////////////////////////////////////*/

    function _registered(address agent) private view returns (Agent storage a) {
        a = _agents[agent];
        if (a.status == AgentStatus.None) revert AgentRegistryNotRegistered(agent);
    }

    function _addOffer(address agent, Agent storage a, bytes32 capability, uint128 price) private {
        if (capability == bytes32(0)) revert AgentRegistryEmptyCapability();
        if (price == 0) revert AgentRegistryZeroPrice(capability);
        Offer storage o = _offers[agent][capability];
        if (o.capPos != 0) revert AgentRegistryDuplicateCapability(capability);

        a.capabilities.push(capability);
        _agentsFor[capability].push(agent);
        o.price = price;
        o.capPos = uint64(a.capabilities.length);
        o.agentPos = uint64(_agentsFor[capability].length);
        emit CapabilitySet(agent, capability, price);
    }

    function _removeOffer(address agent, Agent storage a, bytes32 capability) private {
        Offer memory o = _offers[agent][capability];

        // Swap-and-pop out of the agent's capability list.
        uint256 lastCap = a.capabilities.length;
        if (o.capPos != lastCap) {
            bytes32 moved = a.capabilities[lastCap - 1];
            a.capabilities[o.capPos - 1] = moved;
            _offers[agent][moved].capPos = o.capPos;
        }
        a.capabilities.pop();

        // Swap-and-pop out of the capability's agent list.
        address[] storage list = _agentsFor[capability];
        uint256 lastAgent = list.length;
        if (o.agentPos != lastAgent) {
            address movedAgent = list[lastAgent - 1];
            list[o.agentPos - 1] = movedAgent;
            _offers[movedAgent][capability].agentPos = o.agentPos;
        }
        list.pop();

        delete _offers[agent][capability];
    }
}
