// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

/// @notice Who may do what: anyone but the agent's managers gives feedback;
/// only its author revokes an entry; anyone responds. Feedback follows the
/// token: after a transfer the new owner may no longer rate the agent and the
/// old one may.
contract Roles_Reputation_Unit_Test is ReputationBase {
    function test_RevertWhen_ManagerRatesItsAgent() public {
        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        address[2] memory managers = [agentOwner, operator];
        for (uint256 i; i < managers.length; ++i) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IReputationRegistry.ReputationRegistrySelfFeedback.selector, agentId, managers[i]
                )
            );
            _give(managers[i], 100, 0, "", "");
        }
        // The owner rates another owner's agent.
        uint256 other = _mintAgent(stranger);
        vm.prank(agentOwner);
        reputation.giveFeedback(other, 1, 0, "", "", "", "", bytes32(0));
        assertEq(reputation.getLastIndex(other, agentOwner), 1, "rated another agent");
    }

    function test_RevertWhen_NewOwnerRatesTransferredAgent() public {
        vm.prank(agentOwner);
        identity.transferFrom(agentOwner, client, agentId);
        vm.expectRevert(
            abi.encodeWithSelector(
                IReputationRegistry.ReputationRegistrySelfFeedback.selector, agentId, client
            )
        );
        _give(client, 1, 0, "", "");
        _give(agentOwner, 1, 0, "", "");
        assertEq(reputation.getLastIndex(agentId, agentOwner), 1, "old owner rates");
    }

    function test_RevertWhen_OtherClientRevokes() public {
        _give(client, 1, 0, "", "");
        address[3] memory others = [client2, agentOwner, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IReputationRegistry.ReputationRegistryUnknownFeedback.selector, agentId, others[i], 1
                )
            );
            vm.prank(others[i]);
            reputation.revokeFeedback(agentId, 1);
        }
        (,,,, bool revoked) = reputation.readFeedback(agentId, client, 1);
        assertFalse(revoked, "untouched");
    }

    function test_AnyoneResponds() public {
        _give(client, 1, 0, "", "");
        address[4] memory anyone = [agentOwner, client, client2, stranger];
        for (uint256 i; i < anyone.length; ++i) {
            vm.prank(anyone[i]);
            reputation.appendResponse(agentId, client, 1, "ipfs://r", bytes32(0));
        }
        assertEq(reputation.getResponseCount(agentId, client, 1, new address[](0)), 4, "four");
    }
}
