// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract AppendResponse_Unit_Test is ReputationBase {
    string internal constant RESPONSE = "ipfs://refund";
    bytes32 internal constant RESPONSE_HASH = keccak256("refund");

    function setUp() public override {
        ReputationBase.setUp();
        _give(client, 10, 0, TAG, "");
    }

    function test_RevertWhen_EntryUnknown() public {
        // it should revert with ReputationRegistryUnknownFeedback
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, client, 2
            )
        );
        vm.prank(agentOwner);
        reputation.appendResponse(agentId, client, 2, RESPONSE, RESPONSE_HASH);
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, client2, 1
            )
        );
        vm.prank(agentOwner);
        reputation.appendResponse(agentId, client2, 1, RESPONSE, RESPONSE_HASH);
    }

    function test_RevertWhen_URIEmpty() public {
        // it should revert with ReputationRegistryEmptyResponseURI
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryEmptyResponseURI.selector)
        );
        vm.prank(agentOwner);
        reputation.appendResponse(agentId, client, 1, "", RESPONSE_HASH);
    }

    function test_appendResponse() public {
        // it should count the response for the entry and for the responder
        // it should accept responses from anyone, several times, also on a revoked entry
        // it should emit {ResponseAppended}
        vm.expectEmit(address(reputation));
        emit IReputationRegistry.ResponseAppended(agentId, client, 1, agentOwner, RESPONSE, RESPONSE_HASH);
        vm.prank(agentOwner);
        reputation.appendResponse(agentId, client, 1, RESPONSE, RESPONSE_HASH);
        vm.prank(agentOwner);
        reputation.appendResponse(agentId, client, 1, RESPONSE, bytes32(0));
        vm.prank(client);
        reputation.revokeFeedback(agentId, 1);
        vm.prank(stranger);
        reputation.appendResponse(agentId, client, 1, "ipfs://spam-tag", bytes32(0));

        address[] memory none = new address[](0);
        assertEq(reputation.getResponseCount(agentId, client, 1, none), 3, "all responses");
        assertEq(reputation.getResponseCount(agentId, client, 1, _clients(agentOwner)), 2, "owner's");
        assertEq(reputation.getResponseCount(agentId, client, 1, _clients(stranger)), 1, "stranger's");
    }
}
