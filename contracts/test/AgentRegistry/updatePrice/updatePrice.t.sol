// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract UpdatePrice_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.updatePrice(CAP_A, PRICE_A);
    }

    function test_RevertWhen_CapabilityNotOffered() public {
        // it should revert with AgentRegistryUnknownCapability
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryUnknownCapability.selector, CAP_C));
        vm.prank(agent);
        registry.updatePrice(CAP_C, PRICE_C);
    }

    function test_RevertWhen_PriceZero() public {
        // it should revert with AgentRegistryZeroPrice
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryZeroPrice.selector, CAP_A));
        vm.prank(agent);
        registry.updatePrice(CAP_A, 0);
    }

    function test_updatePrice_SetsPrice() public {
        // it should set the new price
        // it should leave both lists and the other prices unchanged
        // it should emit {CapabilitySet}
        _registerDefault(agent);
        bytes32[] memory before = registry.getAgent(agent).capabilities;
        address[] memory agentsBefore = Offers.agentsFor(registry, CAP_A);

        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilitySet(agent, CAP_A, PRICE_C);
        vm.prank(agent);
        registry.updatePrice(CAP_A, PRICE_C);

        _assertOffered(agent, CAP_A, PRICE_C);
        _assertOffered(agent, CAP_B, PRICE_B);
        assertEq(
            keccak256(abi.encode(registry.getAgent(agent).capabilities)),
            keccak256(abi.encode(before)),
            "caps"
        );
        assertEq(
            keccak256(abi.encode(Offers.agentsFor(registry, CAP_A))),
            keccak256(abi.encode(agentsBefore)),
            "agents"
        );
        _assertConsistent(agent);
    }

    function test_updatePrice_SamePriceEmits() public {
        // it should still emit {CapabilitySet}
        _registerDefault(agent);
        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilitySet(agent, CAP_B, PRICE_B);
        vm.prank(agent);
        registry.updatePrice(CAP_B, PRICE_B);
        _assertOffered(agent, CAP_B, PRICE_B);
    }

    function test_updatePrice_WhilePaused() public {
        // it should set the new price
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        vm.prank(agent);
        registry.updatePrice(CAP_A, type(uint128).max);
        _assertOffered(agent, CAP_A, type(uint128).max);
        _assertStatus(agent, IAgentRegistry.AgentStatus.Paused);
    }
}
