// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAgentRegistry} from "../../src/interfaces/IAgentRegistry.sol";

/// @notice What callers of the registry do off chain, in Solidity for the
/// tests: page through {IAgentRegistry.offersFor} to list a capability's
/// agents, or to choose the cheapest active one (ties to the lowest address).
library Offers {
    /// @dev Every agent offering `capability`, in the registry's order.
    function agentsFor(IAgentRegistry registry, bytes32 capability)
        internal
        view
        returns (address[] memory all)
    {
        IAgentRegistry.OfferView[] memory offers = _all(registry, capability);
        all = new address[](offers.length);
        for (uint256 i; i < offers.length; ++i) {
            all[i] = offers[i].agent;
        }
    }

    /// @dev The active agent with the lowest price for `capability`; zero if none.
    function cheapestActive(IAgentRegistry registry, bytes32 capability)
        internal
        view
        returns (address agent, uint128 price)
    {
        IAgentRegistry.OfferView[] memory offers = _all(registry, capability);
        for (uint256 i; i < offers.length; ++i) {
            IAgentRegistry.OfferView memory o = offers[i];
            if (!o.active) continue;
            if (agent == address(0) || o.price < price || (o.price == price && o.agent < agent)) {
                agent = o.agent;
                price = o.price;
            }
        }
    }

    function _all(IAgentRegistry registry, bytes32 capability)
        private
        view
        returns (IAgentRegistry.OfferView[] memory all)
    {
        uint256 limit = registry.MAX_PAGE();
        (IAgentRegistry.OfferView[] memory page, uint256 total) = registry.offersFor(capability, 0, limit);
        all = new IAgentRegistry.OfferView[](total);
        uint256 n;
        while (true) {
            for (uint256 i; i < page.length; ++i) {
                all[n++] = page[i];
            }
            if (n >= total || page.length == 0) break;
            (page,) = registry.offersFor(capability, n, limit);
        }
    }
}
