// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";

/// @notice Ghost state of the registry campaign: what every actor should have
/// on record after the handlers' calls, kept without the contract's indexes.
contract RegistryStore {
    uint256 public constant N_CAPS = 5;

    address[] internal _agents;
    bytes32[N_CAPS] internal _caps;

    mapping(address agent => IAgentRegistry.AgentStatus) public status;
    mapping(address agent => string) public metadataURI;
    mapping(address agent => mapping(bytes32 capability => uint128 price)) public priceOf; // 0 = not offered
    mapping(address agent => uint256) public capabilityCount;

    /// @notice Writes meant to be rejected that succeeded (must stay 0).
    uint256 public unexpectedSuccesses;
    /// @notice Writes meant to be rejected that reverted with another error (must stay 0).
    uint256 public wrongReverts;
    bytes public lastWrongRevert;
    /// @notice Writes meant to be rejected that were, with the exact error.
    uint256 public expectedReverts;

    mapping(bytes32 name => uint256) public calls;

    constructor(address[] memory agents_) {
        _agents = agents_;
        for (uint256 c; c < N_CAPS; ++c) {
            _caps[c] = keccak256(abi.encode("capability", c));
        }
    }

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    function countCall(bytes32 name) external {
        calls[name] += 1;
    }

    function setStatus(address agent, IAgentRegistry.AgentStatus s) external {
        status[agent] = s;
    }

    function setMetadataURI(address agent, string calldata uri) external {
        metadataURI[agent] = uri;
    }

    function setPrice(address agent, bytes32 capability, uint128 price) external {
        uint128 old = priceOf[agent][capability];
        if (old == 0 && price != 0) capabilityCount[agent] += 1;
        if (old != 0 && price == 0) capabilityCount[agent] -= 1;
        priceOf[agent][capability] = price;
    }

    /// @dev The agent left: no status, no URI, no offers.
    function clear(address agent) external {
        status[agent] = IAgentRegistry.AgentStatus.None;
        delete metadataURI[agent];
        for (uint256 c; c < N_CAPS; ++c) {
            delete priceOf[agent][_caps[c]];
        }
        capabilityCount[agent] = 0;
    }

    function recordUnexpectedSuccess() external {
        unexpectedSuccesses += 1;
    }

    function recordWrongRevert(bytes calldata data) external {
        wrongReverts += 1;
        lastWrongRevert = data;
    }

    function recordExpectedRevert() external {
        expectedReverts += 1;
    }

    /*//////////////////////////////////////////////////////////////
                                READS
    //////////////////////////////////////////////////////////////*/

    function agents() external view returns (address[] memory) {
        return _agents;
    }

    function agentCount() external view returns (uint256) {
        return _agents.length;
    }

    function agentAt(uint256 i) external view returns (address) {
        return _agents[i];
    }

    function capabilityAt(uint256 c) external view returns (bytes32) {
        return _caps[c];
    }

    function capabilities() external view returns (bytes32[N_CAPS] memory) {
        return _caps;
    }

    /// @notice The whole ghost in one call (the invariants run after every call,
    /// so they read it in bulk): per agent its status, URI hash, offer count and
    /// the price of each pool capability (0 = not offered).
    function ghost()
        external
        view
        returns (
            address[] memory agents_,
            bytes32[N_CAPS] memory caps,
            IAgentRegistry.AgentStatus[] memory statuses,
            bytes32[] memory uriHashes,
            uint256[] memory counts,
            uint128[N_CAPS][] memory prices
        )
    {
        uint256 n = _agents.length;
        agents_ = _agents;
        caps = _caps;
        statuses = new IAgentRegistry.AgentStatus[](n);
        uriHashes = new bytes32[](n);
        counts = new uint256[](n);
        prices = new uint128[N_CAPS][](n);
        for (uint256 i; i < n; ++i) {
            address a = _agents[i];
            statuses[i] = status[a];
            uriHashes[i] = keccak256(bytes(metadataURI[a]));
            counts[i] = capabilityCount[a];
            for (uint256 c; c < N_CAPS; ++c) {
                prices[i][c] = priceOf[a][_caps[c]];
            }
        }
    }
}
