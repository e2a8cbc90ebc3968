// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../utils/Offers.sol";
import {IAgentRegistry} from "../../src/interfaces/IAgentRegistry.sol";
import {AgentRegistry} from "../../src/AgentRegistry.sol";
import {Test} from "../utils/Test.sol";
import {RegistryHandler} from "./handlers/RegistryHandler.sol";
import {RegistryStore} from "./stores/RegistryStore.sol";

/// @notice Invariants of AgentRegistry under random sequences of every write by
/// a few agents sharing a few capabilities. See README.md.
contract Registry_Invariant_Test is Test {
    AgentRegistry internal registry;
    RegistryHandler internal handler;
    RegistryStore internal store;

    function setUp() public {
        registry = new AgentRegistry(address(0));
        handler = new RegistryHandler(registry);
        store = handler.store();

        bytes4[] memory selectors = new bytes4[](9);
        selectors[0] = RegistryHandler.register.selector;
        selectors[1] = RegistryHandler.addCapability.selector;
        selectors[2] = RegistryHandler.updatePrice.selector;
        selectors[3] = RegistryHandler.removeCapability.selector;
        selectors[4] = RegistryHandler.setMetadataURI.selector;
        selectors[5] = RegistryHandler.pause.selector;
        selectors[6] = RegistryHandler.resume.selector;
        selectors[7] = RegistryHandler.leave.selector;
        selectors[8] = RegistryHandler.attemptRejected.selector;
        targetContract(address(handler));
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @dev The ghost, read from the store in one call.
    struct Ghost {
        address[] agents;
        bytes32[5] caps;
        IAgentRegistry.AgentStatus[] statuses;
        bytes32[] uriHashes;
        uint256[] counts;
        uint128[5][] prices; // prices[agent][capability]; 0 = not offered
    }

    function _ghost() internal view returns (Ghost memory g) {
        (g.agents, g.caps, g.statuses, g.uriHashes, g.counts, g.prices) = store.ghost();
    }

    /// @dev The pool index of `cap`, or 5 if it is not in the pool.
    function _capIndex(Ghost memory g, bytes32 cap) internal pure returns (uint256 c) {
        for (; c < 5; ++c) {
            if (g.caps[c] == cap) return c;
        }
    }

    /// @dev 10. For every capability, cheapestActive is the active agent with
    /// the lowest price, ties to the lowest address, found by scanning the
    /// ghost record of every agent; (0, 0) when no active agent offers it.
    function invariant_cheapestActiveMatchesBruteForce() external view {
        Ghost memory g = _ghost();
        for (uint256 c; c < 5; ++c) {
            address best;
            uint128 bestPrice;
            for (uint256 i; i < g.agents.length; ++i) {
                uint128 p = g.prices[i][c];
                if (g.statuses[i] != IAgentRegistry.AgentStatus.Active || p == 0) continue;
                if (best == address(0) || p < bestPrice || (p == bestPrice && g.agents[i] < best)) {
                    (best, bestPrice) = (g.agents[i], p);
                }
            }
            (address got, uint128 gotPrice) = Offers.cheapestActive(registry, g.caps[c]);
            assertEq(got, best, "cheapestActive agent == brute force");
            assertEq(gotPrice, bestPrice, "cheapestActive price == brute force");
        }
        (address none, uint128 nonePrice) = Offers.cheapestActive(registry, "never-offered");
        assertEq(none, address(0), "nobody offers an unused capability");
        assertEq(nonePrice, 0, "no price for an unused capability");
    }

    /// @dev 11. agentCount is the number of agents registered (active or
    /// paused), and isActive is true exactly for active ones.
    function invariant_agentCountMatchesGhost() external view {
        Ghost memory g = _ghost();
        uint256 registered;
        for (uint256 i; i < g.agents.length; ++i) {
            if (g.statuses[i] != IAgentRegistry.AgentStatus.None) ++registered;
            assertEq(
                registry.isActive(g.agents[i]), g.statuses[i] == IAgentRegistry.AgentStatus.Active, "isActive"
            );
        }
        assertEq(registry.agentCount(), registered, "agentCount == registered agents");
    }

    /// @dev 12. Each agent's record (status, URI, capabilities and prices) is
    /// the ghost record: every listed capability once, at its ghost price, and
    /// priceOf agreeing for every capability.
    function invariant_agentRecordsMatchGhost() external view {
        Ghost memory g = _ghost();
        for (uint256 i; i < g.agents.length; ++i) {
            IAgentRegistry.AgentView memory v = registry.getAgent(g.agents[i]);
            assertEq(uint256(v.status), uint256(g.statuses[i]), "status");
            assertEq(keccak256(bytes(v.metadataURI)), g.uriHashes[i], "metadataURI");
            assertEq(v.capabilities.length, g.counts[i], "capability count");
            assertEq(v.prices.length, v.capabilities.length, "one price per capability");
            uint256 seen; // bitmask of pool capabilities listed so far
            for (uint256 k; k < v.capabilities.length; ++k) {
                uint256 c = _capIndex(g, v.capabilities[k]);
                assertTrue(c < 5, "listed capability is from the pool");
                assertTrue((seen >> c) & 1 == 0, "capability listed once");
                seen |= 1 << c;
                assertTrue(v.prices[k] != 0, "listed capability is offered");
                assertEq(v.prices[k], g.prices[i][c], "listed price == ghost price");
            }
            for (uint256 c; c < 5; ++c) {
                (bool offered, uint128 price) = registry.priceOf(g.agents[i], g.caps[c]);
                assertEq(offered, g.prices[i][c] != 0, "priceOf offered");
                assertEq(price, g.prices[i][c], "priceOf price");
            }
        }
    }

    /// @dev 13. The two indexes agree: agentsFor(capability) lists exactly the
    /// registered agents (active or paused) offering it, each once.
    function invariant_indexesConsistent() external view {
        Ghost memory g = _ghost();
        for (uint256 c; c < 5; ++c) {
            address[] memory list = Offers.agentsFor(registry, g.caps[c]);
            uint256 expected;
            for (uint256 i; i < g.agents.length; ++i) {
                uint256 seen;
                for (uint256 k; k < list.length; ++k) {
                    if (list[k] == g.agents[i]) ++seen;
                }
                bool offers = g.prices[i][c] != 0;
                assertEq(seen, offers ? 1 : 0, "agentsFor lists each offering agent once");
                if (offers) ++expected;
            }
            assertEq(list.length, expected, "agentsFor lists nobody else");
        }
    }

    /// @dev 14. Every write made to be rejected (not registered, already
    /// registered, duplicate, unknown, zero price, empty name or URI, last
    /// capability, wrong status) reverted with exactly the expected error.
    function invariant_rejectedWritesRevertExactly() external view {
        assertEq(store.unexpectedSuccesses(), 0, "a write that must be rejected succeeded");
        assertEq(store.wrongReverts(), 0, "a rejected write reverted with another error");
    }
}
