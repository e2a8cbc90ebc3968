// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IdentityRegistry} from "../../../src/IdentityRegistry.sol";
import {ReputationRegistry} from "../../../src/ReputationRegistry.sol";
import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {Erc8004Store} from "../stores/Erc8004Store.sol";
import {BaseHandler} from "./BaseHandler.sol";

/// @notice Calls every write of the ERC-8004 registries as one of a few actors
/// (each with a key, so any of them can prove a wallet): registrations,
/// transfers, wallet proofs and clears, feedback at two decimal precisions,
/// revocations and responses. `attemptRejected` makes writes that must revert
/// and records whether they did, with exactly the expected error.
contract Erc8004Handler is BaseHandler {
    uint256 internal constant N_ACTORS = 5;
    uint256 internal constant MAX_AGENTS = 6;

    IdentityRegistry public immutable identity;
    ReputationRegistry public immutable reputation;
    Erc8004Store public immutable store;

    address[] internal _actors;
    mapping(address actor => uint256 key) internal _keys;

    constructor(IdentityRegistry identity_, ReputationRegistry reputation_) {
        identity = identity_;
        reputation = reputation_;
        store = new Erc8004Store();
        for (uint256 i; i < N_ACTORS; ++i) {
            string memory name = string(abi.encodePacked("erc8004-actor-", bytes1(uint8(48 + i))));
            address a = _named(name);
            _actors.push(a);
            _keys[a] = uint256(keccak256(bytes(name)));
        }
    }

    modifier instrument(bytes32 name) {
        store.countCall(name);
        _;
    }

    function actors() external view returns (address[] memory) {
        return _actors;
    }

    /*//////////////////////////////////////////////////////////////
                                IDENTITY
    //////////////////////////////////////////////////////////////*/

    function register(uint256 actorSeed, bool withURI) external instrument("register") {
        if (store.agentCount() >= MAX_AGENTS) return;
        address owner = _actor(_actors, actorSeed);
        vm.prank(owner);
        uint256 agentId = withURI ? identity.register("ipfs://registration") : identity.register();
        uint256 expected = store.addAgent(owner);
        require(agentId == expected, "agent ids count up");
    }

    function transfer(uint256 agentSeed, uint256 toSeed) external instrument("transfer") {
        (bool found, uint256 agentId) = _pickAgent(agentSeed);
        if (!found) return;
        address from = store.ownerOf(agentId);
        address to = _actor(_actors, toSeed);
        if (to == from) return;
        vm.prank(from);
        identity.transferFrom(from, to, agentId);
        store.setOwner(agentId, to);
    }

    function setWallet(uint256 agentSeed, uint256 walletSeed, uint256 delay)
        external
        instrument("setWallet")
    {
        (bool found, uint256 agentId) = _pickAgent(agentSeed);
        if (!found) return;
        address owner = store.ownerOf(agentId);
        address wallet = _actor(_actors, walletSeed);
        uint256 deadline = block.timestamp + bound(delay, 0, identity.MAX_DEADLINE_DELAY());
        bytes memory sig = _sign(_keys[wallet], identity.agentWalletDigest(agentId, wallet, owner, deadline));
        vm.prank(owner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        store.setWallet(agentId, wallet);
    }

    function unsetWallet(uint256 agentSeed) external instrument("unsetWallet") {
        (bool found, uint256 agentId) = _pickAgent(agentSeed);
        if (!found) return;
        vm.prank(store.ownerOf(agentId));
        identity.unsetAgentWallet(agentId);
        store.setWallet(agentId, address(0));
    }

    /*//////////////////////////////////////////////////////////////
                                REPUTATION
    //////////////////////////////////////////////////////////////*/

    function giveFeedback(uint256 agentSeed, uint256 clientSeed, uint256 valueSeed, bool fine)
        external
        instrument("giveFeedback")
    {
        (bool found, uint256 agentId) = _pickAgent(agentSeed);
        if (!found) return;
        address client = _actor(_actors, clientSeed);
        if (client == store.ownerOf(agentId)) client = _actor(_actors, clientSeed % N_ACTORS + 1);
        int128 value = int128(int256(bound(valueSeed, 0, 20_000))) - 10_000;
        uint8 decimals = fine ? 2 : 0;
        vm.prank(client);
        reputation.giveFeedback(agentId, value, decimals, fine ? "fine" : "", "", "", "", bytes32(0));
        store.addEntry(agentId, client, value, decimals);
    }

    function revokeFeedback(uint256 agentSeed, uint256 clientSeed, uint256 indexSeed)
        external
        instrument("revokeFeedback")
    {
        (bool found, uint256 agentId, address client, uint64 index) =
            _pickEntry(agentSeed, clientSeed, indexSeed);
        if (!found) return;
        if (store.entries(agentId, client)[index - 1].revoked) return;
        vm.prank(client);
        reputation.revokeFeedback(agentId, index);
        store.revoke(agentId, client, index);
    }

    function appendResponse(uint256 agentSeed, uint256 clientSeed, uint256 indexSeed, uint256 responderSeed)
        external
        instrument("appendResponse")
    {
        (bool found, uint256 agentId, address client, uint64 index) =
            _pickEntry(agentSeed, clientSeed, indexSeed);
        if (!found) return;
        vm.prank(_actor(_actors, responderSeed));
        reputation.appendResponse(agentId, client, index, "ipfs://response", bytes32(0));
        store.respond(agentId, client, index);
    }

    /*//////////////////////////////////////////////////////////////
                            REJECTED WRITES
    //////////////////////////////////////////////////////////////*/

    /// @dev One write that must revert, chosen by `kind`: the owner rating its own
    /// agent, revoking an unknown or a revoked entry, a non-owner managing the agent,
    /// a wallet proof signed by another key, an out-of-range value.
    function attemptRejected(uint256 kind, uint256 agentSeed, uint256 actorSeed)
        external
        instrument("attemptRejected")
    {
        (bool found, uint256 agentId) = _pickAgent(agentSeed);
        if (!found) return;
        address owner = store.ownerOf(agentId);
        address other = _actor(_actors, actorSeed);
        if (other == owner) other = _actor(_actors, actorSeed % N_ACTORS + 1);
        kind %= 5;
        bytes memory call;
        bytes memory expected;
        address target = address(reputation);
        address caller = owner;
        if (kind == 0) {
            call =
                abi.encodeCall(IReputationRegistry.giveFeedback, (agentId, 1, 0, "", "", "", "", bytes32(0)));
            expected = abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistrySelfFeedback.selector, agentId, owner
            );
        } else if (kind == 1) {
            caller = other;
            (uint64 index, bool revoked) = _firstRevokedOrPast(agentId, other);
            call = abi.encodeCall(IReputationRegistry.revokeFeedback, (agentId, index));
            expected = revoked
                ? abi.encodeWithSelector(
                    IReputationRegistry.ReputationRegistryAlreadyRevoked.selector, agentId, index
                )
                : abi.encodeWithSelector(
                    IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, other, index
                );
        } else if (kind == 2) {
            caller = other;
            target = address(identity);
            call = abi.encodeCall(IIdentityRegistry.setAgentURI, (agentId, "ipfs://hijack"));
            expected = abi.encodeWithSelector(
                IIdentityRegistry.IdentityRegistryNotAuthorized.selector, agentId, other
            );
        } else if (kind == 3) {
            target = address(identity);
            uint256 deadline = block.timestamp;
            // `owner` signs for `other`'s address.
            bytes memory sig =
                _sign(_keys[owner], identity.agentWalletDigest(agentId, other, owner, deadline));
            call = abi.encodeCall(IIdentityRegistry.setAgentWallet, (agentId, other, deadline, sig));
            expected = abi.encodeWithSelector(
                IIdentityRegistry.IdentityRegistryInvalidWalletSignature.selector, other
            );
        } else {
            caller = other;
            int128 tooBig = reputation.MAX_ABS_VALUE() + 1;
            call = abi.encodeCall(
                IReputationRegistry.giveFeedback, (agentId, -tooBig, 0, "", "", "", "", bytes32(0))
            );
            expected =
                abi.encodeWithSelector(IReputationRegistry.ReputationRegistryValueRange.selector, -tooBig);
        }
        vm.prank(caller);
        (bool success, bytes memory data) = target.call(call);
        store.recordRejected(success, data, expected);
    }

    /*//////////////////////////////////////////////////////////////
                                PICKING
    //////////////////////////////////////////////////////////////*/

    function _pickAgent(uint256 seed) internal view returns (bool found, uint256 agentId) {
        uint256 n = store.agentCount();
        if (n == 0) return (false, 0);
        return (true, seed % n + 1);
    }

    /// @dev An existing entry: an agent, one of its clients, one of that client's indexes.
    function _pickEntry(uint256 agentSeed, uint256 clientSeed, uint256 indexSeed)
        internal
        view
        returns (bool found, uint256 agentId, address client, uint64 index)
    {
        (found, agentId) = _pickAgent(agentSeed);
        if (!found) return (false, 0, address(0), 0);
        address[] memory clients = store.clients(agentId);
        if (clients.length == 0) return (false, 0, address(0), 0);
        client = clients[clientSeed % clients.length];
        index = uint64(indexSeed % store.entries(agentId, client).length + 1);
    }

    /// @dev A revoked entry of `client` about `agentId` if there is one, else the
    /// index past its last entry.
    function _firstRevokedOrPast(uint256 agentId, address client) internal view returns (uint64, bool) {
        Erc8004Store.Entry[] memory e = store.entries(agentId, client);
        for (uint256 i; i < e.length; ++i) {
            if (e[i].revoked) return (uint64(i + 1), true);
        }
        return (uint64(e.length + 1), false);
    }

    function _sign(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }
}
