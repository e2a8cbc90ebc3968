// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract SetAgentURI_Unit_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
    }

    function test_RevertWhen_AgentUnknown() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(7);
        vm.prank(agentOwner);
        identity.setAgentURI(7, AGENT_URI_2);
    }

    function test_RevertWhen_CallerNotAuthorized() public {
        // it should revert with IdentityRegistryNotAuthorized
        _expectNotAuthorized(agentId, stranger);
        vm.prank(stranger);
        identity.setAgentURI(agentId, AGENT_URI_2);
        assertEq(identity.tokenURI(agentId), AGENT_URI, "unchanged");
    }

    function test_setAgentURI_ByOwner() public {
        // it should store the new token URI
        // it should emit {URIUpdated} naming the caller
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.URIUpdated(agentId, AGENT_URI_2, agentOwner);
        vm.prank(agentOwner);
        identity.setAgentURI(agentId, AGENT_URI_2);
        assertEq(identity.tokenURI(agentId), AGENT_URI_2, "uri");
    }

    function test_setAgentURI_ByOperator() public {
        // it should store the new token URI
        // it should emit {URIUpdated} naming the caller
        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.URIUpdated(agentId, AGENT_URI_2, operator);
        vm.prank(operator);
        identity.setAgentURI(agentId, AGENT_URI_2);
        assertEq(identity.tokenURI(agentId), AGENT_URI_2, "uri");
    }

    function test_setAgentURI_ByApprovedAddress() public {
        // it should store the new token URI
        vm.prank(agentOwner);
        identity.approve(operator, agentId);
        vm.prank(operator);
        identity.setAgentURI(agentId, "");
        assertEq(identity.tokenURI(agentId), "", "cleared");
    }
}
