// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract UnsetAgentWallet_Unit_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
        _setWallet(agentId);
    }

    function test_RevertWhen_AgentUnknown() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(3);
        vm.prank(agentOwner);
        identity.unsetAgentWallet(3);
    }

    function test_RevertWhen_CallerNotAuthorized() public {
        // it should revert with IdentityRegistryNotAuthorized
        _expectNotAuthorized(agentId, wallet);
        vm.prank(wallet);
        identity.unsetAgentWallet(agentId);
        assertEq(identity.getAgentWallet(agentId), wallet, "wallet kept");
    }

    function test_unsetAgentWallet() public {
        // it should clear the agent wallet
        // it should answer an empty agentWallet metadata value
        // it should emit {MetadataSet} for agentWallet with an empty value
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(agentId, WALLET_KEY, WALLET_KEY, "");
        vm.prank(agentOwner);
        identity.unsetAgentWallet(agentId);
        assertEq(identity.getAgentWallet(agentId), address(0), "cleared");
        assertEq(identity.getMetadata(agentId, WALLET_KEY), bytes(""), "metadata cleared");
    }
}
