// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract RevokeFeedback_Unit_Test is ReputationBase {
    function setUp() public override {
        ReputationBase.setUp();
        _give(client, 80, 0, TAG, "");
        _give(client, 90, 0, TAG, "");
        _give(client2, 70, 0, TAG, "");
    }

    function _expectUnknown(address who, uint64 index) internal {
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, who, index
            )
        );
    }

    function test_RevertWhen_IndexUnknown() public {
        // it should revert with ReputationRegistryUnknownFeedback
        _expectUnknown(client, 0);
        vm.prank(client);
        reputation.revokeFeedback(agentId, 0);
        _expectUnknown(client, 3);
        vm.prank(client);
        reputation.revokeFeedback(agentId, 3);
        // Another client's entry is not the caller's to revoke.
        _expectUnknown(stranger, 1);
        vm.prank(stranger);
        reputation.revokeFeedback(agentId, 1);
    }

    function test_RevertWhen_AlreadyRevoked() public {
        // it should revert with ReputationRegistryAlreadyRevoked
        vm.prank(client);
        reputation.revokeFeedback(agentId, 1);
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryAlreadyRevoked.selector, agentId, 1)
        );
        vm.prank(client);
        reputation.revokeFeedback(agentId, 1);
    }

    function test_revokeFeedback() public {
        // it should mark it revoked and keep it readable
        // it should leave the client's other entries and other clients' entries alone
        // it should emit {FeedbackRevoked}
        vm.expectEmit(address(reputation));
        emit IReputationRegistry.FeedbackRevoked(agentId, client, 2);
        vm.prank(client);
        reputation.revokeFeedback(agentId, 2);

        (int128 value,,,, bool revoked) = reputation.readFeedback(agentId, client, 2);
        assertEq(value, 90, "still readable");
        assertTrue(revoked, "revoked");
        (,,,, revoked) = reputation.readFeedback(agentId, client, 1);
        assertFalse(revoked, "first entry kept");
        (,,,, revoked) = reputation.readFeedback(agentId, client2, 1);
        assertFalse(revoked, "other client kept");
        assertEq(reputation.getLastIndex(agentId, client), 2, "index unchanged");
    }
}
