// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../../utils/Offers.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

/// @notice Fuzz tests against a model kept in the test: random registrations,
/// prices, pauses, removals and departures, then every view compared with a
/// brute-force answer computed from the model.
contract Registry_Fuzz_Test is RegistryBase {
    uint256 internal constant N_AGENTS = 8;
    uint256 internal constant N_CAPS = 5;

    address[N_AGENTS] internal agents;
    bytes32[N_CAPS] internal capPool;

    // The model.
    IAgentRegistry.AgentStatus[N_AGENTS] internal mStatus;
    bool[N_CAPS][N_AGENTS] internal mOffered;
    uint128[N_CAPS][N_AGENTS] internal mPrice;
    uint256[N_AGENTS] internal mCount;

    function setUp() public override {
        RegistryBase.setUp();
        for (uint256 i; i < N_AGENTS; ++i) {
            agents[i] = makeAddr(string(abi.encodePacked("fuzz-agent-", bytes1(uint8(48 + i)))));
        }
        for (uint256 c; c < N_CAPS; ++c) {
            capPool[c] = bytes32(uint256(0xca90 + c));
        }
    }

    /*//////////////////////////////////////////////////////////////
                                MODEL
    //////////////////////////////////////////////////////////////*/

    function _rand(uint256 seed, uint256 a, uint256 b) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(seed, a, b)));
    }

    /// @dev Registers agent `i` with a random non-empty subset of the pool at
    /// prices in [1, maxPrice]; small maxPrice forces ties.
    function _registerRandom(uint256 seed, uint256 i, uint256 maxPrice) internal {
        uint256 mask = _rand(seed, i, 1) % (2 ** N_CAPS - 1) + 1; // 1 .. 31: never empty
        uint256 n;
        for (uint256 c; c < N_CAPS; ++c) {
            if (mask & (1 << c) != 0) ++n;
        }
        bytes32[] memory caps = new bytes32[](n);
        uint128[] memory prices = new uint128[](n);
        uint256 k;
        // Start at a random capability so list orders differ between agents.
        uint256 start = _rand(seed, i, 2) % N_CAPS;
        for (uint256 j; j < N_CAPS; ++j) {
            uint256 c = (start + j) % N_CAPS;
            if (mask & (1 << c) == 0) continue;
            uint128 price = uint128(_rand(seed, i, 10 + c) % maxPrice + 1);
            caps[k] = capPool[c];
            prices[k] = price;
            ++k;
            mOffered[i][c] = true;
            mPrice[i][c] = price;
        }
        mCount[i] = n;
        mStatus[i] = IAgentRegistry.AgentStatus.Active;
        _register(agents[i], caps, prices);
    }

    function _leave(uint256 i) internal {
        vm.prank(agents[i]);
        registry.leave();
        mStatus[i] = IAgentRegistry.AgentStatus.None;
        for (uint256 c; c < N_CAPS; ++c) {
            mOffered[i][c] = false;
            mPrice[i][c] = 0;
        }
        mCount[i] = 0;
    }

    function _bruteForceCheapest(uint256 c) internal view returns (address best, uint128 bestPrice) {
        for (uint256 i; i < N_AGENTS; ++i) {
            if (mStatus[i] != IAgentRegistry.AgentStatus.Active || !mOffered[i][c]) continue;
            uint128 p = mPrice[i][c];
            if (best == address(0) || p < bestPrice || (p == bestPrice && agents[i] < best)) {
                (best, bestPrice) = (agents[i], p);
            }
        }
    }

    /// @dev Every view agrees with the model, for every agent and capability.
    function _assertMatchesModel() internal view {
        uint256 registered;
        for (uint256 i; i < N_AGENTS; ++i) {
            IAgentRegistry.AgentView memory v = registry.getAgent(agents[i]);
            assertEq(uint256(v.status), uint256(mStatus[i]), "status");
            assertEq(v.capabilities.length, mCount[i], "capability count");
            if (mStatus[i] != IAgentRegistry.AgentStatus.None) ++registered;
            for (uint256 k; k < v.capabilities.length; ++k) {
                uint256 c = uint256(v.capabilities[k]) - 0xca90;
                assertTrue(c < N_CAPS && mOffered[i][c], "listed capability is offered");
                assertEq(v.prices[k], mPrice[i][c], "listed price");
                assertEq(_count(v.capabilities, v.capabilities[k]), 1, "capability listed once");
            }
            for (uint256 c; c < N_CAPS; ++c) {
                (bool offered, uint128 price) = registry.priceOf(agents[i], capPool[c]);
                assertEq(offered, mOffered[i][c], "priceOf offered");
                assertEq(price, mPrice[i][c], "priceOf price");
            }
        }
        assertEq(registry.agentCount(), registered, "agentCount");
        for (uint256 c; c < N_CAPS; ++c) {
            address[] memory list = Offers.agentsFor(registry, capPool[c]);
            uint256 expected;
            for (uint256 i; i < N_AGENTS; ++i) {
                uint256 seen = _count(list, agents[i]);
                assertEq(seen, mOffered[i][c] ? 1 : 0, "agentsFor membership");
                if (mOffered[i][c]) ++expected;
            }
            assertEq(list.length, expected, "agentsFor length");
            (address best, uint128 price) = Offers.cheapestActive(registry, capPool[c]);
            (address bfBest, uint128 bfPrice) = _bruteForceCheapest(c);
            assertEq(best, bfBest, "cheapestActive agent");
            assertEq(price, bfPrice, "cheapestActive price");
        }
    }

    /*//////////////////////////////////////////////////////////////
                                TESTS
    //////////////////////////////////////////////////////////////*/

    function testFuzz_cheapestActive_MatchesBruteForce(uint256 seed, uint8 maxPriceSeed) public {
        uint256 maxPrice = bound(maxPriceSeed, 1, 6);
        // Register in a random order (odd step over 8 slots visits each once).
        uint256 start = _rand(seed, 0, 0) % N_AGENTS;
        uint256 step = (_rand(seed, 0, 1) % 4) * 2 + 1;
        for (uint256 j; j < N_AGENTS; ++j) {
            uint256 i = (start + j * step) % N_AGENTS;
            uint256 roll = _rand(seed, i, 3) % 8;
            if (roll == 0) continue; // never registers
            _registerRandom(seed, i, maxPrice);
            if (roll == 1) {
                _leave(i);
            } else if (roll <= 3) {
                vm.prank(agents[i]);
                registry.pause();
                mStatus[i] = IAgentRegistry.AgentStatus.Paused;
            }
        }
        _assertMatchesModel();

        // A few undercuts and price rises, then check again.
        for (uint256 r; r < 6; ++r) {
            uint256 i = _rand(seed, r, 4) % N_AGENTS;
            uint256 c = _rand(seed, r, 5) % N_CAPS;
            if (!mOffered[i][c]) continue;
            uint128 price = uint128(_rand(seed, r, 6) % maxPrice + 1);
            vm.prank(agents[i]);
            registry.updatePrice(capPool[c], price);
            mPrice[i][c] = price;
        }
        _assertMatchesModel();
    }

    function testFuzz_removeCapability_KeepsIndexesConsistent(uint256 seed) public {
        for (uint256 i; i < N_AGENTS; ++i) {
            _registerRandom(seed, i, 1000);
        }
        for (uint256 r; r < 24; ++r) {
            uint256 i = _rand(seed, r, 7) % N_AGENTS;
            uint256 c = _rand(seed, r, 8) % N_CAPS;
            if (mOffered[i][c]) {
                if (mCount[i] == 1) continue; // the last capability cannot go
                vm.expectEmit(address(registry));
                emit IAgentRegistry.CapabilityRemoved(agents[i], capPool[c]);
                vm.prank(agents[i]);
                registry.removeCapability(capPool[c]);
                mOffered[i][c] = false;
                mPrice[i][c] = 0;
                --mCount[i];
            } else {
                uint128 price = uint128(_rand(seed, r, 9) % 1000 + 1);
                vm.prank(agents[i]);
                registry.addCapability(capPool[c], price);
                mOffered[i][c] = true;
                mPrice[i][c] = price;
                ++mCount[i];
            }
            _assertMatchesModel();
        }
    }

    function testFuzz_leave_ThenRegisterAgain(uint256 seed, uint8 whoSeed, bool pauseFirst) public {
        for (uint256 i; i < N_AGENTS; ++i) {
            _registerRandom(seed, i, 4);
        }
        uint256 who = bound(whoSeed, 0, N_AGENTS - 1);
        if (pauseFirst) {
            vm.prank(agents[who]);
            registry.pause();
            mStatus[who] = IAgentRegistry.AgentStatus.Paused;
        }
        bytes32[N_AGENTS] memory before;
        for (uint256 i; i < N_AGENTS; ++i) {
            before[i] = _snapshot(agents[i]);
        }

        vm.expectEmit(address(registry));
        emit IAgentRegistry.AgentLeft(agents[who]);
        _leave(who);
        _assertMatchesModel();
        for (uint256 i; i < N_AGENTS; ++i) {
            if (i != who) assertEq(_snapshot(agents[i]), before[i], "others untouched");
        }

        _registerRandom(_rand(seed, 99, 99), who, 4);
        _assertMatchesModel();
        assertEq(registry.agentCount(), N_AGENTS, "agentCount restored");
    }

    function testFuzz_updatePrice_SetsAnyNonZeroPrice(uint128 price) public {
        price = uint128(bound(price, 1, type(uint128).max));
        _registerDefault(agent);
        vm.prank(agent);
        registry.updatePrice(CAP_B, price);
        _assertOffered(agent, CAP_B, price);
        _assertOffered(agent, CAP_A, PRICE_A);
    }

    function testFuzz_register_AnyCountUpToMax(uint8 nSeed) public {
        uint256 n = bound(nSeed, 1, 32);
        (bytes32[] memory caps, uint128[] memory prices) = _manyOffers(n);
        _register(agent, caps, prices);
        assertEq(registry.getAgent(agent).capabilities.length, n, "capability count");
        _assertConsistent(agent);
    }
}
