// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice Ghost state of the ERC-8004 campaign: every agent's owner and
/// wallet, and every feedback entry with its revoked flag and responses, kept
/// without the contracts' own bookkeeping.
contract Erc8004Store {
    struct Entry {
        int128 value;
        uint8 decimals;
        bool revoked;
        uint64 responses;
    }

    uint256 public agentCount;
    mapping(uint256 agentId => address) public ownerOf;
    mapping(uint256 agentId => address) public walletOf;
    mapping(uint256 agentId => mapping(address client => Entry[])) internal _entries;
    mapping(uint256 agentId => address[]) internal _clients;

    /// @notice Writes meant to be rejected that succeeded (must stay 0).
    uint256 public unexpectedSuccesses;
    /// @notice Writes meant to be rejected that reverted with another error (must stay 0).
    uint256 public wrongReverts;
    bytes public lastWrongRevert;
    /// @notice Writes meant to be rejected that were, with the exact error.
    uint256 public expectedReverts;

    mapping(bytes32 name => uint256) public calls;

    function countCall(bytes32 name) external {
        calls[name] += 1;
    }

    function addAgent(address owner) external returns (uint256 agentId) {
        agentId = ++agentCount;
        ownerOf[agentId] = owner;
        walletOf[agentId] = owner;
    }

    function setOwner(uint256 agentId, address owner) external {
        ownerOf[agentId] = owner;
        walletOf[agentId] = address(0);
    }

    function setWallet(uint256 agentId, address wallet) external {
        walletOf[agentId] = wallet;
    }

    function addEntry(uint256 agentId, address client, int128 value, uint8 decimals) external {
        if (_entries[agentId][client].length == 0) _clients[agentId].push(client);
        _entries[agentId][client].push(
            Entry({value: value, decimals: decimals, revoked: false, responses: 0})
        );
    }

    function revoke(uint256 agentId, address client, uint64 index) external {
        _entries[agentId][client][index - 1].revoked = true;
    }

    function respond(uint256 agentId, address client, uint64 index) external {
        _entries[agentId][client][index - 1].responses += 1;
    }

    function recordRejected(bool success, bytes calldata data, bytes calldata expected) external {
        if (success) {
            unexpectedSuccesses += 1;
        } else if (keccak256(data) != keccak256(expected)) {
            wrongReverts += 1;
            lastWrongRevert = data;
        } else {
            expectedReverts += 1;
        }
    }

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    function entries(uint256 agentId, address client) external view returns (Entry[] memory) {
        return _entries[agentId][client];
    }

    function clients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }
}
