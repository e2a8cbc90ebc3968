// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract SetMetadata_Unit_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
    }

    function test_RevertWhen_AgentUnknown() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(9);
        vm.prank(agentOwner);
        identity.setMetadata(9, "k", "v");
    }

    function test_RevertWhen_CallerNotAuthorized() public {
        // it should revert with IdentityRegistryNotAuthorized
        _expectNotAuthorized(agentId, stranger);
        vm.prank(stranger);
        identity.setMetadata(agentId, "k", "v");
    }

    function test_RevertWhen_KeyReserved() public {
        // it should revert with IdentityRegistryReservedKey
        vm.expectRevert(
            abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryReservedKey.selector, WALLET_KEY)
        );
        vm.prank(agentOwner);
        identity.setMetadata(agentId, WALLET_KEY, abi.encodePacked(stranger));
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet untouched");
    }

    function test_setMetadata_StoresAndClears() public {
        // it should store the value (an empty value clears it)
        // it should emit {MetadataSet}
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(agentId, "model", "model", bytes("gpt"));
        vm.prank(agentOwner);
        identity.setMetadata(agentId, "model", "gpt");
        assertEq(identity.getMetadata(agentId, "model"), bytes("gpt"), "set");

        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        vm.prank(operator);
        identity.setMetadata(agentId, "model", "");
        assertEq(identity.getMetadata(agentId, "model"), bytes(""), "cleared");
    }

    function test_setMetadata_KeysArePerAgent() public {
        uint256 other = _mintAgent(stranger);
        vm.prank(agentOwner);
        identity.setMetadata(agentId, "k", "mine");
        assertEq(identity.getMetadata(other, "k"), bytes(""), "other agent untouched");
    }
}
