// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

/// @notice An agent can only change its own record: every write keys on
/// msg.sender, so a stranger's write reverts and another agent's write
/// changes only that other agent's record.
contract Roles_Unit_Test is RegistryBase {
    bytes32 internal agentBefore;

    function setUp() public override {
        RegistryBase.setUp();
        _registerDefault(agent);
        agentBefore = _snapshot(agent);
    }

    function _assertAgentUntouched() internal view {
        assertEq(_snapshot(agent), agentBefore, "agent record untouched");
        _assertOffered(agent, CAP_A, PRICE_A);
        _assertOffered(agent, CAP_B, PRICE_B);
        _assertStatus(agent, IAgentRegistry.AgentStatus.Active);
        _assertConsistent(agent);
    }

    function _expectNotRegistered(address who) internal {
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, who));
    }

    function test_RevertWhen_StrangerWrites() public {
        vm.startPrank(stranger);
        _expectNotRegistered(stranger);
        registry.addCapability(CAP_C, PRICE_C);
        _expectNotRegistered(stranger);
        registry.updatePrice(CAP_A, 1);
        _expectNotRegistered(stranger);
        registry.removeCapability(CAP_A);
        _expectNotRegistered(stranger);
        registry.setMetadataURI(URI_2);
        _expectNotRegistered(stranger);
        registry.pause();
        _expectNotRegistered(stranger);
        registry.resume();
        _expectNotRegistered(stranger);
        registry.leave();
        vm.stopPrank();
        _assertAgentUntouched();
        assertEq(registry.agentCount(), 1, "agentCount");
    }

    function test_register_StrangerAddsOnlyItself() public {
        _register(stranger, _caps(CAP_A), _prices(1));
        _assertAgentUntouched();
        _assertOffered(stranger, CAP_A, 1);
        assertEq(registry.agentCount(), 2, "agentCount");
    }

    function test_RevertWhen_OtherAgentUpdatesPriceItDoesNotOffer() public {
        _register(agent2, _caps(CAP_C), _prices(PRICE_C));
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryUnknownCapability.selector, CAP_A));
        vm.prank(agent2);
        registry.updatePrice(CAP_A, 1);
        _assertAgentUntouched();
    }

    function test_RevertWhen_OtherAgentRemovesCapabilityItDoesNotOffer() public {
        _register(agent2, _caps(CAP_C, CAP_D), _prices(PRICE_C, PRICE_C));
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryUnknownCapability.selector, CAP_A));
        vm.prank(agent2);
        registry.removeCapability(CAP_A);
        _assertAgentUntouched();
    }

    function test_OtherAgentWritesAffectOnlyItself() public {
        _registerDefault(agent2);
        vm.startPrank(agent2);
        registry.updatePrice(CAP_A, 1);
        registry.addCapability(CAP_C, PRICE_C);
        registry.removeCapability(CAP_B);
        registry.setMetadataURI(URI_2);
        registry.pause();
        registry.resume();
        registry.pause();
        vm.stopPrank();
        _assertAgentUntouched();
        _assertOffered(agent2, CAP_A, 1);
        _assertNotOffered(agent2, CAP_B);
        _assertStatus(agent2, IAgentRegistry.AgentStatus.Paused);

        vm.prank(agent2);
        registry.leave();
        _assertAgentUntouched();
        assertEq(registry.agentCount(), 1, "agentCount");
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent, "agent still listed");
        assertEq(price, PRICE_A, "agent's price");
    }
}
