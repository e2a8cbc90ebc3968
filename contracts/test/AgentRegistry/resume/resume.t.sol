// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract Resume_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.resume();
    }

    function test_RevertWhen_CallerActive() public {
        // it should revert with AgentRegistryInvalidStatus
        _registerDefault(agent);
        vm.expectRevert(
            abi.encodeWithSelector(
                IAgentRegistry.AgentRegistryInvalidStatus.selector, agent, IAgentRegistry.AgentStatus.Active
            )
        );
        vm.prank(agent);
        registry.resume();
    }

    function test_resume_MarksActive() public {
        // it should mark the caller Active
        // it should keep its offers and prices, including changes made while paused
        // it should make the caller eligible for cheapestActive again
        // it should emit {AgentResumed}
        _registerDefault(agent);
        vm.startPrank(agent);
        registry.pause();
        registry.updatePrice(CAP_A, PRICE_C);
        vm.stopPrank();

        vm.expectEmit(address(registry));
        emit IAgentRegistry.AgentResumed(agent);
        vm.prank(agent);
        registry.resume();

        _assertStatus(agent, IAgentRegistry.AgentStatus.Active);
        _assertOffered(agent, CAP_A, PRICE_C);
        _assertOffered(agent, CAP_B, PRICE_B);
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent, "eligible again");
        assertEq(price, PRICE_C, "price set while paused");
        assertEq(registry.agentCount(), 1, "agentCount unchanged");
    }
}
