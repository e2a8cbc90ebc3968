// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

/// @notice getAgent, isActive, priceOf, agentsFor, cheapestActive, agentCount, MAX_CAPABILITIES.
contract Views_Unit_Test is RegistryBase {
    function test_MAX_CAPABILITIES() public view {
        assertEq(registry.MAX_CAPABILITIES(), 32, "MAX_CAPABILITIES");
    }

    /*//////////////////////////////////////////////////////////////
                                GETAGENT
    //////////////////////////////////////////////////////////////*/

    function test_getAgent_Unknown() public view {
        // it should return status None and empty lists
        IAgentRegistry.AgentView memory v = registry.getAgent(stranger);
        assertEq(uint256(v.status), uint256(IAgentRegistry.AgentStatus.None), "status");
        assertEq(v.metadataURI, "", "metadata");
        assertEq(v.capabilities.length, 0, "capabilities");
        assertEq(v.prices.length, 0, "prices");
    }

    function test_getAgent_Registered() public {
        // it should return its status, metadata URI, capabilities and matching prices
        _registerDefault(agent);
        IAgentRegistry.AgentView memory v = registry.getAgent(agent);
        assertEq(uint256(v.status), uint256(IAgentRegistry.AgentStatus.Active), "status");
        assertEq(v.metadataURI, URI, "metadata");
        assertEq(v.capabilities.length, 2, "capabilities");
        assertEq(v.capabilities[0], CAP_A, "cap 0");
        assertEq(v.capabilities[1], CAP_B, "cap 1");
        assertEq(v.prices[0], PRICE_A, "price 0");
        assertEq(v.prices[1], PRICE_B, "price 1");
    }

    function test_getAgent_Paused() public {
        // it should return its status, metadata URI, capabilities and matching prices
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        assertEq(
            uint256(registry.getAgent(agent).status), uint256(IAgentRegistry.AgentStatus.Paused), "status"
        );
    }

    /*//////////////////////////////////////////////////////////////
                                ISACTIVE
    //////////////////////////////////////////////////////////////*/

    function test_isActive() public {
        // it should be true only for a registered agent that is not paused
        assertFalse(registry.isActive(agent), "unknown");
        _registerDefault(agent);
        assertTrue(registry.isActive(agent), "registered");
        vm.prank(agent);
        registry.pause();
        assertFalse(registry.isActive(agent), "paused");
        vm.prank(agent);
        registry.resume();
        assertTrue(registry.isActive(agent), "resumed");
        vm.prank(agent);
        registry.leave();
        assertFalse(registry.isActive(agent), "left");
    }

    /*//////////////////////////////////////////////////////////////
                                PRICEOF
    //////////////////////////////////////////////////////////////*/

    function test_priceOf_Unknown() public view {
        // it should return (false, 0)
        (bool offered, uint128 price) = registry.priceOf(stranger, CAP_A);
        assertFalse(offered, "offered");
        assertEq(price, 0, "price");
    }

    function test_priceOf_OfferedAndNot() public {
        // it should return (false, 0)
        // it should return (true, price)
        _registerDefault(agent);
        (bool offered, uint128 price) = registry.priceOf(agent, CAP_B);
        assertTrue(offered, "B offered");
        assertEq(price, PRICE_B, "B price");
        (offered, price) = registry.priceOf(agent, CAP_C);
        assertFalse(offered, "C not offered");
        assertEq(price, 0, "C price");
        (offered, price) = registry.priceOf(agent2, CAP_A);
        assertFalse(offered, "other agent");
    }

    /*//////////////////////////////////////////////////////////////
                                AGENTSFOR
    //////////////////////////////////////////////////////////////*/

    function test_agentsFor_Empty() public view {
        // it should list every agent offering the capability, paused ones included
        assertEq(Offers.agentsFor(registry, CAP_A).length, 0, "none");
    }

    function test_agentsFor_IncludesPaused() public {
        // it should list every agent offering the capability, paused ones included
        _registerDefault(agent);
        _register(agent2, _caps(CAP_A), _prices(PRICE_C));
        vm.prank(agent);
        registry.pause();
        address[] memory forA = Offers.agentsFor(registry, CAP_A);
        assertEq(forA.length, 2, "both listed");
        assertEq(forA[0], agent, "paused agent listed");
        assertEq(forA[1], agent2, "active agent listed");
    }

    /*//////////////////////////////////////////////////////////////
                            CHEAPESTACTIVE
    //////////////////////////////////////////////////////////////*/

    function test_cheapestActive_NoAgents() public view {
        // it should return (address(0), 0)
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, address(0), "agent");
        assertEq(price, 0, "price");
    }

    function test_cheapestActive_OnlyPausedAgents() public {
        // it should return (address(0), 0)
        _registerDefault(agent);
        vm.prank(agent);
        registry.pause();
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, address(0), "agent");
        assertEq(price, 0, "price");
    }

    function test_cheapestActive_LowestPrice() public {
        // it should return the lowest price, skipping paused agents
        _register(agent, _caps(CAP_A), _prices(PRICE_B));
        _register(agent2, _caps(CAP_A), _prices(PRICE_C)); // cheaper, later in the list
        address agent3 = makeAddr("agent3");
        _register(agent3, _caps(CAP_A), _prices(PRICE_A));
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent2, "cheapest");
        assertEq(price, PRICE_C, "price");
    }

    function test_cheapestActive_TieGoesToLowestAddress() public {
        // it should return the lowest address
        (address lo, address hi) = agent < agent2 ? (agent, agent2) : (agent2, agent);
        // Higher address listed first: the later, lower address wins the tie.
        _register(hi, _caps(CAP_A), _prices(PRICE_A));
        _register(lo, _caps(CAP_A), _prices(PRICE_A));
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, lo, "lower address wins (listed second)");
        assertEq(price, PRICE_A, "price");

        // Lower address listed first: the later, higher address does not take it.
        vm.prank(lo);
        registry.leave();
        vm.prank(hi);
        registry.leave();
        _register(lo, _caps(CAP_A), _prices(PRICE_A));
        _register(hi, _caps(CAP_A), _prices(PRICE_A));
        (best,) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, lo, "lower address wins (listed first)");
    }

    function test_cheapestActive_FollowsPriceUpdates() public {
        // it should return the lowest price, skipping paused agents
        _registerDefault(agent);
        _register(agent2, _caps(CAP_A), _prices(PRICE_B));
        (address best,) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent, "agent first");
        vm.prank(agent2);
        registry.updatePrice(CAP_A, PRICE_C);
        uint128 price;
        (best, price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent2, "undercut");
        assertEq(price, PRICE_C, "undercut price");
    }

    function test_cheapestActive_SkipsPausedCheaperAgent() public {
        // it should return the lowest price, skipping paused agents
        _register(agent, _caps(CAP_A), _prices(1));
        _register(agent2, _caps(CAP_A), _prices(PRICE_A));
        vm.prank(agent);
        registry.pause();
        (address best, uint128 price) = Offers.cheapestActive(registry, CAP_A);
        assertEq(best, agent2, "paused cheaper agent skipped");
        assertEq(price, PRICE_A, "price");
    }

    /*//////////////////////////////////////////////////////////////
                                AGENTCOUNT
    //////////////////////////////////////////////////////////////*/

    function test_agentCount() public {
        // it should count registered agents, not those that left
        assertEq(registry.agentCount(), 0, "empty");
        _registerDefault(agent);
        _registerDefault(agent2);
        assertEq(registry.agentCount(), 2, "two");
        vm.prank(agent);
        registry.pause();
        assertEq(registry.agentCount(), 2, "paused agents count");
        vm.prank(agent2);
        registry.leave();
        assertEq(registry.agentCount(), 1, "left agents do not");
    }
}
