// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {Vm} from "../../utils/Vm.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract Transfer_Identity_Unit_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
        vm.prank(agentOwner);
        identity.setMetadata(agentId, "model", "offline");
        _setWallet(agentId);
    }

    function test_transferFrom_ClearsWallet() public {
        // it should clear the agent wallet
        // it should emit {MetadataSet} for agentWallet with an empty value
        // it should leave the URI and the other metadata to the new owner
        // it should let only the new owner manage the agent
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(agentId, WALLET_KEY, WALLET_KEY, "");
        vm.prank(agentOwner);
        identity.transferFrom(agentOwner, stranger, agentId);

        assertEq(identity.ownerOf(agentId), stranger, "new owner");
        assertEq(identity.getAgentWallet(agentId), address(0), "wallet cleared");
        assertEq(identity.tokenURI(agentId), AGENT_URI, "uri kept");
        assertEq(identity.getMetadata(agentId, "model"), bytes("offline"), "metadata kept");

        _expectNotAuthorized(agentId, agentOwner);
        vm.prank(agentOwner);
        identity.setAgentURI(agentId, AGENT_URI_2);
        vm.prank(stranger);
        identity.setAgentURI(agentId, AGENT_URI_2);
        assertEq(identity.tokenURI(agentId), AGENT_URI_2, "new owner manages");
    }

    function test_safeTransferFrom_ClearsWallet() public {
        // it should clear the agent wallet
        vm.prank(agentOwner);
        identity.safeTransferFrom(agentOwner, stranger, agentId);
        assertEq(identity.getAgentWallet(agentId), address(0), "wallet cleared");
    }

    function test_transferFrom_WalletAlreadyCleared() public {
        // it should emit no {MetadataSet}
        vm.prank(agentOwner);
        identity.unsetAgentWallet(agentId);
        vm.recordLogs();
        vm.prank(agentOwner);
        identity.transferFrom(agentOwner, stranger, agentId);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            assertTrue(logs[i].topics[0] != IIdentityRegistry.MetadataSet.selector, "no MetadataSet");
        }
    }
}
