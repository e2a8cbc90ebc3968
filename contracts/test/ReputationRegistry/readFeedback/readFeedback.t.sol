// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract ReadFeedback_Unit_Test is ReputationBase {
    function test_RevertWhen_EntryUnknown() public {
        // it should revert with ReputationRegistryUnknownFeedback
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, client, 0
            )
        );
        reputation.readFeedback(agentId, client, 0);
        _give(client, 1, 0, "", "");
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, client, 2
            )
        );
        reputation.readFeedback(agentId, client, 2);
    }

    function test_readFeedback() public {
        // it should return its value, decimals, tags and revoked flag
        _give(client, -32, 1, "tradingYield", "week");
        (int128 value, uint8 decimals, string memory tag1, string memory tag2, bool revoked) =
            reputation.readFeedback(agentId, client, 1);
        assertEq(value, -32, "value");
        assertEq(decimals, 1, "decimals");
        assertEq(tag1, "tradingYield", "tag1");
        assertEq(tag2, "week", "tag2");
        assertFalse(revoked, "revoked");
    }
}
