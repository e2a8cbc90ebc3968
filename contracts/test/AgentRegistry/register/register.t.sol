// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract Register_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerAlreadyRegistered() public {
        // it should revert with AgentRegistryAlreadyRegistered
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryAlreadyRegistered.selector, agent));
        _register(agent, _caps(CAP_C), _prices(PRICE_C));
    }

    function test_RevertWhen_CallerPaused() public {
        // it should revert with AgentRegistryAlreadyRegistered
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryAlreadyRegistered.selector, agent));
        _register(agent, _caps(CAP_C), _prices(PRICE_C));
    }

    function test_RevertWhen_LengthMismatch() public {
        // it should revert with AgentRegistryLengthMismatch
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryLengthMismatch.selector, 2, 1));
        _register(agent, _caps(CAP_A, CAP_B), _prices(PRICE_A));
    }

    function test_RevertWhen_LengthMismatchMorePrices() public {
        // it should revert with AgentRegistryLengthMismatch
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryLengthMismatch.selector, 1, 2));
        _register(agent, _caps(CAP_A), _prices(PRICE_A, PRICE_B));
    }

    function test_RevertWhen_NoCapabilities() public {
        // it should revert with AgentRegistryCapabilityCount
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryCapabilityCount.selector, 0, 32));
        _register(agent, new bytes32[](0), new uint128[](0));
    }

    function test_RevertWhen_TooManyCapabilities() public {
        // it should revert with AgentRegistryCapabilityCount
        (bytes32[] memory caps, uint128[] memory prices) = _manyOffers(33);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryCapabilityCount.selector, 33, 32));
        _register(agent, caps, prices);
    }

    function test_RevertWhen_MetadataEmpty() public {
        // it should revert with AgentRegistryEmptyMetadata
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyMetadata.selector));
        vm.prank(agent);
        registry.register("", _caps(CAP_A), _prices(PRICE_A));
    }

    function test_RevertWhen_CapabilityZero() public {
        // it should revert with AgentRegistryEmptyCapability
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyCapability.selector));
        _register(agent, _caps(CAP_A, bytes32(0)), _prices(PRICE_A, PRICE_B));
    }

    function test_RevertWhen_PriceZero() public {
        // it should revert with AgentRegistryZeroPrice
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryZeroPrice.selector, CAP_B));
        _register(agent, _caps(CAP_A, CAP_B), _prices(PRICE_A, 0));
    }

    function test_RevertWhen_CapabilityRepeated() public {
        // it should revert with AgentRegistryDuplicateCapability
        vm.expectRevert(
            abi.encodeWithSelector(IAgentRegistry.AgentRegistryDuplicateCapability.selector, CAP_A)
        );
        _register(agent, _caps(CAP_A, CAP_B, CAP_A), _prices(PRICE_A, PRICE_B, PRICE_C));
    }

    function test_register_StoresRecord() public {
        // it should mark the caller Active
        // it should store the metadata URI
        // it should list the capabilities in order with their prices
        _register(agent, _caps(CAP_A, CAP_B, CAP_C), _prices(PRICE_A, PRICE_B, PRICE_C));

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(uint256(v.status), uint256(IAgentRegistry.AgentStatus.Active), "status");
        assertEq(v.metadataURI, URI, "metadata");
        assertEq(v.capabilities.length, 3, "capability count");
        assertEq(v.capabilities[0], CAP_A, "cap 0");
        assertEq(v.capabilities[1], CAP_B, "cap 1");
        assertEq(v.capabilities[2], CAP_C, "cap 2");
        assertEq(v.prices[0], PRICE_A, "price 0");
        assertEq(v.prices[1], PRICE_B, "price 1");
        assertEq(v.prices[2], PRICE_C, "price 2");
        assertTrue(registry.isActive(agent), "active");
        assertEq(registry.agentCount(), 1, "agentCount");
        _assertOffered(agent, CAP_A, PRICE_A);
        _assertOffered(agent, CAP_B, PRICE_B);
        _assertOffered(agent, CAP_C, PRICE_C);
        _assertConsistent(agent);
    }

    function test_register_AppendsToAgentLists() public {
        // it should add the caller to each capability's agent list
        // it should increment agentCount
        _registerDefault(agent);
        _register(agent2, _caps(CAP_B), _prices(PRICE_C));

        address[] memory forA = Offers.agentsFor(registry, CAP_A);
        address[] memory forB = Offers.agentsFor(registry, CAP_B);
        assertEq(forA.length, 1, "agents for A");
        assertEq(forA[0], agent, "A[0]");
        assertEq(forB.length, 2, "agents for B");
        assertEq(forB[0], agent, "B[0]");
        assertEq(forB[1], agent2, "B[1]");
        assertEq(registry.agentCount(), 2, "agentCount");
    }

    function test_register_Events() public {
        // it should emit {AgentRegistered}
        // it should emit {CapabilitySet} for each capability, in order
        vm.expectEmit(address(registry));
        emit IAgentRegistry.AgentRegistered(agent, URI);
        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilitySet(agent, CAP_A, PRICE_A);
        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilitySet(agent, CAP_B, PRICE_B);
        _registerDefault(agent);
    }

    function test_register_MaxCapabilities() public {
        // it should register
        (bytes32[] memory caps, uint128[] memory prices) = _manyOffers(32);
        _register(agent, caps, prices);
        assertEq(registry.getAgent(agent).capabilities.length, 32, "capability count");
        _assertConsistent(agent);
    }

    function test_register_AfterLeaving() public {
        // it should register afresh
        _registerDefault(agent);
        vm.prank(agent);
        registry.leave();

        vm.prank(agent);
        registry.register(URI_2, _caps(CAP_C), _prices(PRICE_C));

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(uint256(v.status), uint256(IAgentRegistry.AgentStatus.Active), "status");
        assertEq(v.metadataURI, URI_2, "metadata");
        assertEq(v.capabilities.length, 1, "only the new capability");
        _assertOffered(agent, CAP_C, PRICE_C);
        _assertNotOffered(agent, CAP_A);
        _assertNotOffered(agent, CAP_B);
        assertEq(registry.agentCount(), 1, "agentCount");
    }
}
