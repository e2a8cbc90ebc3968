// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract GiveFeedback_Unit_Test is ReputationBase {
    function _expectSelf(address who) internal {
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistrySelfFeedback.selector, agentId, who)
        );
    }

    function test_RevertWhen_DecimalsAbove18() public {
        // it should revert with ReputationRegistryValueDecimals
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryValueDecimals.selector, 19)
        );
        _give(client, 1, 19, "", "");
    }

    function test_RevertWhen_ValueOutOfRange() public {
        // it should revert with ReputationRegistryValueRange
        int128 max = reputation.MAX_ABS_VALUE();
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryValueRange.selector, max + 1)
        );
        _give(client, max + 1, 0, "", "");
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryValueRange.selector, -max - 1)
        );
        _give(client, -max - 1, 0, "", "");
        _give(client, max, 0, "", "");
        _give(client, -max, 18, "", "");
        assertEq(reputation.getLastIndex(agentId, client), 2, "bounds accepted");
    }

    function test_RevertWhen_AgentUnknown() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(agentId + 1);
        vm.prank(client);
        reputation.giveFeedback(agentId + 1, 1, 0, "", "", "", "", bytes32(0));
    }

    function test_RevertWhen_CallerIsOwnerOrOperator() public {
        // it should revert with ReputationRegistrySelfFeedback
        _expectSelf(agentOwner);
        _give(agentOwner, 100, 0, "", "");

        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        _expectSelf(operator);
        _give(operator, 100, 0, "", "");

        vm.prank(agentOwner);
        identity.approve(client2, agentId);
        _expectSelf(client2);
        _give(client2, 100, 0, "", "");
        assertEq(reputation.getClients(agentId).length, 0, "no client");
    }

    function test_giveFeedback_StoresAndEmits() public {
        // it should store the entry at the caller's next index (from 1)
        // it should list the caller among the agent's clients once
        // it should emit {NewFeedback} with the endpoint, URI and hash
        vm.expectEmit(address(reputation));
        emit IReputationRegistry.NewFeedback(
            agentId, client, 1, 87, 0, TAG, TAG, TAG_2, ENDPOINT, FEEDBACK_URI, FEEDBACK_HASH
        );
        _give(client, 87, 0, TAG, TAG_2);
        _give(client, -5, 1, TAG, "");
        _give(client2, 9977, 2, "uptime", "");

        (int128 value, uint8 decimals, string memory tag1, string memory tag2, bool revoked) =
            reputation.readFeedback(agentId, client, 1);
        assertEq(value, 87, "value");
        assertEq(decimals, 0, "decimals");
        assertEq(tag1, TAG, "tag1");
        assertEq(tag2, TAG_2, "tag2");
        assertFalse(revoked, "not revoked");
        (value, decimals,, tag2,) = reputation.readFeedback(agentId, client, 2);
        assertEq(value, -5, "second value");
        assertEq(decimals, 1, "second decimals");
        assertEq(tag2, "", "no tag2");

        assertEq(reputation.getLastIndex(agentId, client), 2, "client index");
        assertEq(reputation.getLastIndex(agentId, client2), 1, "client2 index");
        address[] memory clients = reputation.getClients(agentId);
        assertEq(clients.length, 2, "two clients");
        assertEq(clients[0], client, "first client");
        assertEq(clients[1], client2, "second client");
    }

    function test_giveFeedback_NewTag() public {
        // it should store the tag once and read it back
        string memory long = "a tag longer than thirty-one bytes, stored in more than one slot";
        _give(client, 1, 0, long, TAG);
        _give(client2, 2, 0, TAG, long);
        (,, string memory tag1, string memory tag2,) = reputation.readFeedback(agentId, client, 1);
        assertEq(tag1, long, "long tag1");
        assertEq(tag2, TAG, "tag2");
        (,, tag1, tag2,) = reputation.readFeedback(agentId, client2, 1);
        assertEq(tag1, TAG, "same tag, other position");
        assertEq(tag2, long, "long tag2");
        (uint64 count,,) = reputation.getSummary(agentId, _clients(client, client2), long, "");
        assertEq(count, 1, "one entry has it as tag1");
        (count,,) = reputation.getSummary(agentId, _clients(client, client2), "", long);
        assertEq(count, 1, "one entry has it as tag2");
    }

    function test_giveFeedback_KnownClientAndTags() public {
        // it should write two slots: the client's last index and the one-slot entry
        _give(client, 1, 0, TAG, TAG_2);
        vm.record();
        _give(client, 2, 0, TAG, TAG_2);
        (, bytes32[] memory writes) = vm.accesses(address(reputation));
        assertEq(writes.length, 2, "two slots written");
        assertTrue(writes[0] != writes[1], "distinct slots");
        (int128 value,, string memory tag1, string memory tag2,) = reputation.readFeedback(agentId, client, 2);
        assertEq(value, 2, "value");
        assertEq(tag1, TAG, "tag1");
        assertEq(tag2, TAG_2, "tag2");
    }

    function test_giveFeedback_OptionalFieldsEmpty() public {
        // it should store the entry
        vm.prank(client);
        reputation.giveFeedback(agentId, 1, 0, "", "", "", "", bytes32(0));
        (int128 value,, string memory tag1,,) = reputation.readFeedback(agentId, client, 1);
        assertEq(value, 1, "value");
        assertEq(tag1, "", "no tag");
    }

    function test_giveFeedback_ByTheAgentWallet() public {
        // it should store the entry
        // The wallet is paid, it does not manage the agent: it may rate it.
        _setWallet(agentId);
        _give(wallet, 50, 0, "", "");
        assertEq(reputation.getLastIndex(agentId, wallet), 1, "stored");
    }
}
