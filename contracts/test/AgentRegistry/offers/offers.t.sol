// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

/// @notice Mirrors offers.tree: offerOf, and offersFor's bounded pages.
contract Offers_Unit_Test is RegistryBase {
    function _registerMany(uint256 n) internal returns (address[] memory agents) {
        agents = new address[](n);
        for (uint256 i; i < n; ++i) {
            agents[i] = address(uint160(0x10000 + i));
            vm.prank(agents[i]);
            registry.register(URI, _caps(CAP_A), _prices(PRICE_A + uint128(i)));
        }
    }

    function test_offerOf() public {
        // it should return (false, 0)
        // it should return whether it is active (not paused)
        // it should return its price for the capability, 0 when not offered
        vm.prank(agent);
        registry.register(URI, _caps(CAP_A), _prices(PRICE_A));
        (bool active, uint128 price) = registry.offerOf(agent, CAP_A);
        assertTrue(active, "active");
        assertEq(price, PRICE_A, "price");
        (active, price) = registry.offerOf(agent, CAP_B);
        assertTrue(active, "the agent is active");
        assertEq(price, 0, "but offers no translate");
        vm.prank(agent);
        registry.pause();
        (active, price) = registry.offerOf(agent, CAP_A);
        assertFalse(active, "paused");
        assertEq(price, PRICE_A, "the offer stays");
        (active, price) = registry.offerOf(stranger, CAP_A);
        assertFalse(active, "unregistered");
        assertEq(price, 0, "no offer");
    }

    function test_RevertWhen_LimitZeroOrAboveMax() public {
        // it should revert with AgentRegistryPageLimit
        uint256 max = registry.MAX_PAGE();
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryPageLimit.selector, 0, max));
        registry.offersFor(CAP_A, 0, 0);
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryPageLimit.selector, max + 1, max));
        registry.offersFor(CAP_A, 0, max + 1);
    }

    function test_offersFor_pages() public {
        // it should return an empty page and the total
        // it should return at most `limit` offers from `offset`, in list order
        // it should mark paused agents inactive
        // it should return the total, so pages cover the list once
        address[] memory agents = _registerMany(5);
        vm.prank(agents[3]);
        registry.pause();

        (IAgentRegistry.OfferView[] memory page, uint256 total) = registry.offersFor(CAP_A, 0, 2);
        assertEq(total, 5, "total");
        assertEq(page.length, 2, "a page of the limit");
        assertEq(page[0].agent, agents[0]);
        assertEq(page[1].price, PRICE_A + 1);

        (page, total) = registry.offersFor(CAP_A, 2, 2);
        assertEq(page.length, 2);
        assertEq(page[1].agent, agents[3]);
        assertFalse(page[1].active, "a paused agent is listed inactive");
        assertTrue(page[0].active);

        (page, total) = registry.offersFor(CAP_A, 4, 2);
        assertEq(page.length, 1, "the last page is short");
        assertEq(page[0].agent, agents[4]);

        (page, total) = registry.offersFor(CAP_A, 9, 2);
        assertEq(page.length, 0, "past the end: empty");
        assertEq(total, 5, "past the end: the total");

        (page, total) = registry.offersFor(CAP_B, 0, 10);
        assertEq(page.length + total, 0, "nobody translates");
    }

    function testFuzz_offersFor_pagesCoverTheListOnce(uint8 n, uint8 limit) public {
        // it should return the total, so pages cover the list once
        n = uint8(bound(n, 0, 30));
        limit = uint8(bound(limit, 1, 7));
        address[] memory agents = _registerMany(n);
        uint256 seen;
        for (uint256 offset; offset < n; offset += limit) {
            (IAgentRegistry.OfferView[] memory page, uint256 total) = registry.offersFor(CAP_A, offset, limit);
            assertEq(total, n);
            for (uint256 i; i < page.length; ++i) {
                assertEq(page[i].agent, agents[seen++], "in registration order, once");
            }
        }
        assertEq(seen, n, "every offer read");
    }
}
