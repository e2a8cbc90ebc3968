// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract SetMetadataURI_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.setMetadataURI(URI_2);
    }

    function test_RevertWhen_URIEmpty() public {
        // it should revert with AgentRegistryEmptyMetadata
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyMetadata.selector));
        vm.prank(agent);
        registry.setMetadataURI("");
    }

    function test_setMetadataURI_StoresURI() public {
        // it should store the new URI
        // it should leave the offers and status unchanged
        // it should emit {MetadataUpdated}
        _registerDefault(agent);
        IAgentRegistry.AgentView memory before = registry.getAgent(agent);

        vm.expectEmit(address(registry));
        emit IAgentRegistry.MetadataUpdated(agent, URI_2);
        vm.prank(agent);
        registry.setMetadataURI(URI_2);

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.metadataURI, URI_2, "metadata");
        assertEq(uint256(v.status), uint256(before.status), "status unchanged");
        assertEq(keccak256(abi.encode(v.capabilities)), keccak256(abi.encode(before.capabilities)), "caps");
        assertEq(keccak256(abi.encode(v.prices)), keccak256(abi.encode(before.prices)), "prices");
    }

    function test_setMetadataURI_LongURI() public {
        // it should store the new URI
        _registerDefault(agent);
        string memory long = string(new bytes(300));
        vm.prank(agent);
        registry.setMetadataURI(long);
        assertEq(registry.getAgent(agent).metadataURI, long, "long metadata");
        // Shrinking back clears the old long string's tail.
        vm.prank(agent);
        registry.setMetadataURI(URI);
        assertEq(registry.getAgent(agent).metadataURI, URI, "short metadata");
    }

    function test_setMetadataURI_WhilePaused() public {
        // it should store the new URI
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        vm.prank(agent);
        registry.setMetadataURI(URI_2);
        assertEq(registry.getAgent(agent).metadataURI, URI_2, "metadata");
        _assertStatus(agent, IAgentRegistry.AgentStatus.Paused);
    }
}
