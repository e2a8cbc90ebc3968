// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReputationBase} from "../ReputationBase.t.sol";

contract GetResponseCount_Unit_Test is ReputationBase {
    function setUp() public override {
        ReputationBase.setUp();
        _give(client, 1, 0, "", "");
        _give(client, 2, 0, "", "");
        _give(client2, 3, 0, "", "");
        _respond(agentOwner, client, 1);
        _respond(agentOwner, client, 2);
        _respond(stranger, client, 2);
        _respond(agentOwner, client2, 1);
    }

    function _respond(address who, address to, uint64 index) internal {
        vm.prank(who);
        reputation.appendResponse(agentId, to, index, "ipfs://response", bytes32(0));
    }

    function test_getResponseCount() public view {
        // it should count the responses to every client's entries
        // it should count the responses to every entry of the client
        // it should count its responses, zero for an unknown entry
        address[] memory anyone = new address[](0);
        assertEq(reputation.getResponseCount(agentId, address(0), 0, anyone), 4, "every client");
        assertEq(reputation.getResponseCount(agentId, client, 0, anyone), 3, "every entry of client");
        assertEq(reputation.getResponseCount(agentId, client, 2, anyone), 2, "one entry");
        assertEq(reputation.getResponseCount(agentId, client, 9, anyone), 0, "unknown entry");
        assertEq(reputation.getResponseCount(agentId + 1, address(0), 0, anyone), 0, "unknown agent");
    }

    function test_getResponseCount_ByResponders() public view {
        // it should count only theirs
        assertEq(reputation.getResponseCount(agentId, address(0), 0, _clients(agentOwner)), 3, "owner's");
        assertEq(reputation.getResponseCount(agentId, client, 0, _clients(stranger)), 1, "stranger's");
        assertEq(reputation.getResponseCount(agentId, client, 2, _clients(agentOwner, stranger)), 2, "both");
        assertEq(reputation.getResponseCount(agentId, client2, 1, _clients(stranger)), 0, "none");
    }
}
