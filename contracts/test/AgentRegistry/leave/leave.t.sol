// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract Leave_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNeverRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.leave();
    }

    function test_RevertWhen_CallerAlreadyLeft() public {
        // it should revert with AgentRegistryNotRegistered
        _registerDefault(agent);
        vm.prank(agent);
        registry.leave();
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, agent));
        vm.prank(agent);
        registry.leave();
    }

    function test_leave_ClearsRecord() public {
        // it should set the caller's status to None and clear its URI
        // it should drop every offer and price of the caller
        // it should remove the caller from every capability's agent list
        // it should keep the other agents' lists and positions right
        // it should decrement agentCount
        // it should emit {AgentLeft}
        _register(agent, _caps(CAP_A, CAP_B, CAP_C), _prices(PRICE_A, PRICE_B, PRICE_C));
        // agent2 follows `agent` in A's and C's agent lists (leaving moves it
        // forward); `agent` is alone in B's and D's (leaving pops it).
        _register(agent2, _caps(CAP_A, CAP_C), _prices(PRICE_B, PRICE_A));
        vm.prank(agent);
        registry.addCapability(CAP_D, PRICE_A);
        bytes32 agent2Before = _snapshot(agent2);

        vm.expectEmit(address(registry));
        emit IAgentRegistry.AgentLeft(agent);
        vm.prank(agent);
        registry.leave();

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(uint256(v.status), uint256(IAgentRegistry.AgentStatus.None), "status None");
        assertEq(v.metadataURI, "", "URI cleared");
        assertEq(v.capabilities.length, 0, "no capabilities");
        assertEq(v.prices.length, 0, "no prices");
        assertFalse(registry.isActive(agent), "inactive");
        _assertNotOffered(agent, CAP_A);
        _assertNotOffered(agent, CAP_B);
        _assertNotOffered(agent, CAP_C);
        _assertNotOffered(agent, CAP_D);
        assertEq(Offers.agentsFor(registry, CAP_B).length, 0, "B empty");
        assertEq(Offers.agentsFor(registry, CAP_D).length, 0, "D empty");
        assertEq(Offers.agentsFor(registry, CAP_A).length, 1, "A has agent2 only");
        assertEq(Offers.agentsFor(registry, CAP_A)[0], agent2, "A: agent2");
        assertEq(Offers.agentsFor(registry, CAP_C)[0], agent2, "C: agent2");
        assertEq(_snapshot(agent2), agent2Before, "agent2 untouched");
        _assertConsistent(agent2);
        assertEq(registry.agentCount(), 1, "agentCount");
        (address best,) = Offers.cheapestActive(registry, CAP_B);
        assertEq(best, address(0), "no agent for B");

        // agent2's positions are right: it can remove what was moved.
        vm.prank(agent2);
        registry.removeCapability(CAP_A);
        assertEq(Offers.agentsFor(registry, CAP_A).length, 0, "A empty");
        _assertConsistent(agent2);
    }

    function test_leave_WhilePaused() public {
        // it should leave the same way
        _registerDefault(agent);
        vm.startPrank(agent);
        registry.pause();
        registry.leave();
        vm.stopPrank();
        _assertStatus(agent, IAgentRegistry.AgentStatus.None);
        _assertNotOffered(agent, CAP_A);
        _assertNotOffered(agent, CAP_B);
        assertEq(registry.agentCount(), 0, "agentCount");
    }

    function test_leave_ThenRegisterAgain() public {
        // it should start from an empty record
        _registerDefault(agent);
        vm.prank(agent);
        registry.leave();
        _register(agent, _caps(CAP_B), _prices(PRICE_C));

        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(v.capabilities.length, 1, "fresh list");
        _assertOffered(agent, CAP_B, PRICE_C);
        _assertNotOffered(agent, CAP_A);
        _assertConsistent(agent);
        assertEq(registry.agentCount(), 1, "agentCount");
    }
}
