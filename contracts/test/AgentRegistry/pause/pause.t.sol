// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract Pause_Unit_Test is RegistryBase {
    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.pause();
    }

    function test_RevertWhen_AlreadyPaused() public {
        // it should revert with AgentRegistryInvalidStatus
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        vm.expectRevert(
            abi.encodeWithSelector(
                IAgentRegistry.AgentRegistryInvalidStatus.selector, agent, IAgentRegistry.AgentStatus.Paused
            )
        );
        vm.prank(agent);
        registry.pause();
    }

    function test_pause_MarksPaused() public {
        // it should mark the caller Paused
        // it should keep its offers listed
        // it should leave agentCount unchanged
        // it should drop the caller from cheapestActive
        // it should emit {AgentPaused}
        _registerDefault(agent);
        _register(agent2, _caps(CAP_A), _prices(PRICE_B));
        (address best,) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent, "cheapest before");

        vm.expectEmit(address(registry));
        emit IAgentRegistry.AgentPaused(agent);
        vm.prank(agent);
        registry.pause();

        _assertStatus(agent, IAgentRegistry.AgentStatus.Paused);
        _assertOffered(agent, CAP_A, PRICE_A);
        _assertOffered(agent, CAP_B, PRICE_B);
        assertEq(registry.agentCount(), 2, "agentCount unchanged");
        uint128 price;
        (best, price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent2, "paused agent skipped");
        assertEq(price, PRICE_B, "next price");
        (best, price) = Offers.cheapestActive(registry, CAP_B);
        assertEq(best, address(0), "no active agent for B");
        assertEq(price, 0, "no price for B");
    }
}
