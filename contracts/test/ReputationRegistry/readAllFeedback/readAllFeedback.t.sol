// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReputationBase} from "../ReputationBase.t.sol";

contract ReadAllFeedback_Unit_Test is ReputationBase {
    function setUp() public override {
        ReputationBase.setUp();
        _give(client, 1, 0, TAG, TAG_2);
        _give(client2, 2, 1, TAG, "");
        _give(client, 3, 2, "other", "");
        vm.prank(client);
        reputation.revokeFeedback(agentId, 2);
    }

    function test_readAllFeedback_EveryClient() public view {
        // it should read every client's entries, client by client in order of first feedback
        // it should leave them out
        (
            address[] memory clients,
            uint64[] memory indexes,
            int128[] memory values,
            uint8[] memory decimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revoked
        ) = reputation.readAllFeedback(agentId, new address[](0), "", "", false);
        assertEq(clients.length, 2, "two unrevoked");
        assertEq(clients[0], client, "client first");
        assertEq(indexes[0], 1, "index");
        assertEq(values[0], 1, "value");
        assertEq(decimals[0], 0, "decimals");
        assertEq(tag1s[0], TAG, "tag1");
        assertEq(tag2s[0], TAG_2, "tag2");
        assertFalse(revoked[0], "not revoked");
        assertEq(clients[1], client2, "client2 next");
        assertEq(values[1], 2, "value");
        assertEq(decimals[1], 1, "decimals");
    }

    function test_readAllFeedback_IncludingRevoked() public view {
        // it should return them marked revoked
        (
            address[] memory clients,
            uint64[] memory indexes,
            int128[] memory values,,,,
            bool[] memory revoked
        ) = reputation.readAllFeedback(agentId, new address[](0), "", "", true);
        assertEq(clients.length, 3, "all");
        assertEq(clients[1], client, "client's second entry before client2");
        assertEq(indexes[1], 2, "index 2");
        assertEq(values[1], 3, "value");
        assertTrue(revoked[1], "marked revoked");
    }

    function test_readAllFeedback_GivenClientsInOrder() public view {
        // it should read only those clients, in that order
        (address[] memory clients,,,,,,) =
            reputation.readAllFeedback(agentId, _clients(client2, client), "", "", true);
        assertEq(clients.length, 3, "all");
        assertEq(clients[0], client2, "given order");
        (clients,,,,,,) = reputation.readAllFeedback(agentId, _clients(stranger), "", "", true);
        assertEq(clients.length, 0, "a client with no entries");
    }

    function test_readAllFeedback_TagFilters() public view {
        // it should return only entries with those tags
        (address[] memory clients,,,,,,) =
            reputation.readAllFeedback(agentId, new address[](0), TAG, "", true);
        assertEq(clients.length, 2, "tag1");
        (clients,,,,,,) = reputation.readAllFeedback(agentId, new address[](0), TAG, TAG_2, true);
        assertEq(clients.length, 1, "both tags");
        (clients,,,,,,) = reputation.readAllFeedback(agentId, new address[](0), "", "none", true);
        assertEq(clients.length, 0, "nothing");
    }
}
