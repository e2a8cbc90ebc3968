// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract AddCapability_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNeverRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.addCapability(CAP_A, PRICE_A);
    }

    function test_RevertWhen_CallerLeft() public {
        // it should revert with AgentRegistryNotRegistered
        _registerDefault(agent);
        vm.prank(agent);
        registry.leave();
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, agent));
        vm.prank(agent);
        registry.addCapability(CAP_C, PRICE_C);
    }

    function test_RevertWhen_AtMaxCapabilities() public {
        // it should revert with AgentRegistryCapabilityCount
        (bytes32[] memory caps, uint128[] memory prices) = _manyOffers(32);
        _register(agent, caps, prices);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryCapabilityCount.selector, 33, 32));
        vm.prank(agent);
        registry.addCapability(CAP_A, PRICE_A);
    }

    function test_RevertWhen_CapabilityZero() public {
        // it should revert with AgentRegistryEmptyCapability
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyCapability.selector));
        vm.prank(agent);
        registry.addCapability(bytes32(0), PRICE_A);
    }

    function test_RevertWhen_PriceZero() public {
        // it should revert with AgentRegistryZeroPrice
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryZeroPrice.selector, CAP_C));
        vm.prank(agent);
        registry.addCapability(CAP_C, 0);
    }

    function test_RevertWhen_AlreadyOffered() public {
        // it should revert with AgentRegistryDuplicateCapability
        _registerDefault(agent);
        vm.expectRevert(
            abi.encodeWithSelector(IAgentRegistry.AgentRegistryDuplicateCapability.selector, CAP_B)
        );
        vm.prank(agent);
        registry.addCapability(CAP_B, PRICE_C);
    }

    function test_addCapability_AppendsOffer() public {
        // it should append the capability with its price
        // it should append the caller to the capability's agent list
        // it should emit {CapabilitySet}
        _registerDefault(agent);
        _register(agent2, _caps(CAP_C), _prices(PRICE_A));

        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilitySet(agent, CAP_C, PRICE_C);
        vm.prank(agent);
        registry.addCapability(CAP_C, PRICE_C);

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.capabilities.length, 3, "capability count");
        assertEq(v.capabilities[2], CAP_C, "appended last");
        assertEq(v.prices[2], PRICE_C, "price appended");
        address[] memory forC = Offers.agentsFor(registry, CAP_C);
        assertEq(forC.length, 2, "agents for C");
        assertEq(forC[1], agent, "appended to agent list");
        _assertConsistent(agent);
        _assertConsistent(agent2);
        assertEq(registry.agentCount(), 2, "agentCount unchanged");
    }

    function test_addCapability_WhilePaused() public {
        // it should add the capability and keep the caller paused
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        vm.prank(agent);
        registry.addCapability(CAP_C, PRICE_C);
        _assertOffered(agent, CAP_C, PRICE_C);
        _assertStatus(agent, IAgentRegistry.AgentStatus.Paused);
    }

    function test_addCapability_UpToMax() public {
        // it should add the capability
        (bytes32[] memory caps, uint128[] memory prices) = _manyOffers(31);
        _register(agent, caps, prices);
        vm.prank(agent);
        registry.addCapability(CAP_A, PRICE_A);
        assertEq(registry.getAgent(agent).capabilities.length, 32, "capability count");
        _assertOffered(agent, CAP_A, PRICE_A);
    }
}
