// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract RemoveCapability_Unit_Test is RegistryBase {
    address internal agent3;

    function setUp() public override {
        RegistryBase.setUp();
        agent3 = makeAddr("agent3");
    }

    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.removeCapability(CAP_A);
    }

    function test_RevertWhen_CapabilityNotOffered() public {
        // it should revert with AgentRegistryUnknownCapability
        _registerDefault(agent);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryUnknownCapability.selector, CAP_C));
        vm.prank(agent);
        registry.removeCapability(CAP_C);
    }

    function test_RevertWhen_OnlyCapability() public {
        // it should revert with AgentRegistryCapabilityCount
        _register(agent, _caps(CAP_A), _prices(PRICE_A));
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryCapabilityCount.selector, 0, 32));
        vm.prank(agent);
        registry.removeCapability(CAP_A);
    }

    function test_removeCapability_Last() public {
        // it should drop the offer and its price
        // it should emit {CapabilityRemoved}
        // it should leave agentCount unchanged
        // it should pop it without moving another capability
        _register(agent, _caps(CAP_A, CAP_B, CAP_C), _prices(PRICE_A, PRICE_B, PRICE_C));

        vm.expectEmit(address(registry));
        emit IAgentRegistry.CapabilityRemoved(agent, CAP_C);
        vm.prank(agent);
        registry.removeCapability(CAP_C);

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.capabilities.length, 2, "capability count");
        assertEq(v.capabilities[0], CAP_A, "cap 0 kept");
        assertEq(v.capabilities[1], CAP_B, "cap 1 kept");
        _assertNotOffered(agent, CAP_C);
        assertEq(Offers.agentsFor(registry, CAP_C).length, 0, "no agents left for C");
        _assertConsistent(agent);
        assertEq(registry.agentCount(), 1, "agentCount unchanged");
    }

    function test_removeCapability_NotLast() public {
        // it should move the last capability into its place and keep its position right
        _register(agent, _caps(CAP_A, CAP_B, CAP_C), _prices(PRICE_A, PRICE_B, PRICE_C));

        vm.prank(agent);
        registry.removeCapability(CAP_A);

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.capabilities.length, 2, "capability count");
        assertEq(v.capabilities[0], CAP_C, "last moved into the hole");
        assertEq(v.capabilities[1], CAP_B, "middle kept");
        assertEq(v.prices[0], PRICE_C, "moved price");
        _assertNotOffered(agent, CAP_A);
        _assertConsistent(agent);

        // The moved capability's position is right: removing it now takes the first slot.
        vm.prank(agent);
        registry.removeCapability(CAP_C);
        v = registry.getAgent(agent);
        assertEq(v.capabilities.length, 1, "one left");
        assertEq(v.capabilities[0], CAP_B, "B left");
        _assertNotOffered(agent, CAP_C);
        _assertConsistent(agent);
    }

    function test_removeCapability_LastAgent() public {
        // it should pop the caller without moving another agent
        _registerDefault(agent);
        _registerDefault(agent2);

        vm.prank(agent2);
        registry.removeCapability(CAP_A);

        address[] memory forA = Offers.agentsFor(registry, CAP_A);
        assertEq(forA.length, 1, "one agent left");
        assertEq(forA[0], agent, "first agent kept");
        _assertNotOffered(agent2, CAP_A);
        _assertConsistent(agent);
        _assertConsistent(agent2);
    }

    function test_removeCapability_NotLastAgent() public {
        // it should move the last agent into its place and keep that agent's position right
        _registerDefault(agent);
        _registerDefault(agent2);
        _registerDefault(agent3);

        vm.prank(agent);
        registry.removeCapability(CAP_A);

        address[] memory forA = Offers.agentsFor(registry, CAP_A);
        assertEq(forA.length, 2, "two agents left");
        assertEq(forA[0], agent3, "last agent moved into the hole");
        assertEq(forA[1], agent2, "middle agent kept");
        _assertNotOffered(agent, CAP_A);
        _assertOffered(agent2, CAP_A, PRICE_A);
        _assertOffered(agent3, CAP_A, PRICE_A);

        // The moved agent's position is right: it can leave the list cleanly.
        vm.prank(agent3);
        registry.removeCapability(CAP_A);
        forA = Offers.agentsFor(registry, CAP_A);
        assertEq(forA.length, 1, "one agent left");
        assertEq(forA[0], agent2, "agent2 left");
        _assertConsistent(agent2);
        _assertConsistent(agent3);
    }

    function test_removeCapability_ThenAddAgain() public {
        // it should offer it at the new price at the end of both lists
        _registerDefault(agent);
        _registerDefault(agent2);

        vm.startPrank(agent);
        registry.removeCapability(CAP_A);
        registry.addCapability(CAP_A, PRICE_C);
        vm.stopPrank();

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.capabilities[v.capabilities.length - 1], CAP_A, "at the end of the caller's list");
        address[] memory forA = Offers.agentsFor(registry, CAP_A);
        assertEq(forA[forA.length - 1], agent, "at the end of the agent list");
        _assertOffered(agent, CAP_A, PRICE_C);
        _assertConsistent(agent);
        _assertConsistent(agent2);
    }
}
