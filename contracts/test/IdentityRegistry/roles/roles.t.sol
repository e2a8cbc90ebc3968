// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IdentityBase} from "../IdentityBase.t.sol";

/// @notice Who may manage an agent: its owner, an operator of the owner, or the
/// address approved for the token. A stranger, the agent wallet and another
/// agent's owner may not, and nothing they try changes the agent.
contract Roles_Identity_Unit_Test is IdentityBase {
    uint256 internal agentId;
    uint256 internal deadline;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
        deadline = block.timestamp + 60;
    }

    function _tryEveryWrite(address who) internal {
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, deadline);
        _expectNotAuthorized(agentId, who);
        vm.prank(who);
        identity.setAgentURI(agentId, AGENT_URI_2);
        _expectNotAuthorized(agentId, who);
        vm.prank(who);
        identity.setMetadata(agentId, "k", "v");
        _expectNotAuthorized(agentId, who);
        vm.prank(who);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        _expectNotAuthorized(agentId, who);
        vm.prank(who);
        identity.unsetAgentWallet(agentId);
    }

    function _assertUntouched() internal view {
        assertEq(identity.tokenURI(agentId), AGENT_URI, "uri");
        assertEq(identity.getMetadata(agentId, "k"), bytes(""), "metadata");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet");
    }

    function test_RevertWhen_StrangerWrites() public {
        _tryEveryWrite(stranger);
        _assertUntouched();
    }

    function test_RevertWhen_OtherAgentsOwnerWrites() public {
        _mintAgent(stranger);
        _tryEveryWrite(stranger);
        _assertUntouched();
    }

    function test_RevertWhen_RevokedOperatorWrites() public {
        vm.startPrank(agentOwner);
        identity.setApprovalForAll(operator, true);
        identity.setApprovalForAll(operator, false);
        vm.stopPrank();
        _tryEveryWrite(operator);
        _assertUntouched();
    }

    function test_OperatorAndApprovedManage() public {
        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        vm.startPrank(operator);
        identity.setAgentURI(agentId, AGENT_URI_2);
        identity.setMetadata(agentId, "k", "v");
        identity.unsetAgentWallet(agentId);
        vm.stopPrank();
        assertEq(identity.tokenURI(agentId), AGENT_URI_2, "uri");
        assertEq(identity.getMetadata(agentId, "k"), bytes("v"), "metadata");
        assertEq(identity.getAgentWallet(agentId), address(0), "wallet");

        vm.prank(agentOwner);
        identity.approve(stranger, agentId);
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, deadline);
        vm.prank(stranger);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.getAgentWallet(agentId), wallet, "approved sets the wallet");
    }
}
