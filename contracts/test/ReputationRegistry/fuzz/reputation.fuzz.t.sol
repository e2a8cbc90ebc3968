// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReputationBase} from "../ReputationBase.t.sol";

/// @notice Fuzz tests against a model kept in the test: random values from a few
/// clients, some revoked, then the summary and the full read compared with what
/// the model says.
contract Reputation_Fuzz_Test is ReputationBase {
    uint256 internal constant N = 12;

    function _clientOf(uint256 i) internal view returns (address) {
        return i % 3 == 0 ? client : i % 3 == 1 ? client2 : stranger;
    }

    function testFuzz_getSummary_MatchesModel(int128[N] memory values, uint256 revokeMask, uint8 decimals)
        public
    {
        decimals = uint8(bound(decimals, 0, 18));
        int128 max = reputation.MAX_ABS_VALUE();
        int256 sum;
        uint64 count;
        uint64[3] memory next;
        for (uint256 i; i < N; ++i) {
            int128 v = int128(int256(bound(uint256(int256(values[i]) + 1e38), 0, 2e38)) - 1e38);
            assertLe(uint256(int256(v < 0 ? -v : v)), uint256(int256(max)), "in range");
            address who = _clientOf(i);
            _give(who, v, decimals, "", "");
            uint64 index = ++next[i % 3];
            if (revokeMask & (1 << i) != 0) {
                vm.prank(who);
                reputation.revokeFeedback(agentId, index);
            } else {
                sum += v;
                ++count;
            }
        }
        address[] memory all = new address[](3);
        (all[0], all[1], all[2]) = (client, client2, stranger);
        (uint64 c, int128 value, uint8 d) = reputation.getSummary(agentId, all, "", "");
        assertEq(c, count, "count");
        if (count == 0) {
            assertEq(value, 0, "no value");
            return;
        }
        assertEq(d, decimals, "decimals");
        assertEq(value, sum / int256(uint256(count)), "average");

        (address[] memory clients,,,,,, bool[] memory revoked) =
            reputation.readAllFeedback(agentId, new address[](0), "", "", true);
        assertEq(clients.length, N, "every entry");
        uint256 nRevoked;
        for (uint256 i; i < revoked.length; ++i) {
            if (revoked[i]) ++nRevoked;
        }
        assertEq(nRevoked, N - count, "revoked entries");
    }

    /// @dev Any values within range at any mix of decimals: the summary never
    /// reverts, stays within MAX_ABS_VALUE, and is the model's average at the
    /// model's decimals (the most common, fewest on a tie, lowered until it fits).
    function testFuzz_getSummary_MixedDecimalsNeverRevert(
        int128[N] memory values,
        uint8[N] memory decimals,
        uint256 extremes
    ) public {
        int256 max = reputation.MAX_ABS_VALUE();
        int256 sumWad;
        uint64[19] memory per;
        for (uint256 i; i < N; ++i) {
            uint8 d = uint8(bound(decimals[i], 0, 18));
            // Often the range's very ends, where the overflow was.
            int256 v = extremes & (1 << i) != 0
                ? (values[i] < 0 ? -max : max)
                : int256(bound(uint256(int256(values[i]) + max), 0, uint256(2 * max))) - max;
            _give(_clientOf(i), int128(v), d, "", "");
            sumWad += v * int256(10 ** (18 - d));
            ++per[d];
        }
        uint8 want;
        for (uint8 d = 1; d <= 18; ++d) {
            if (per[d] > per[want]) want = d;
        }
        int256 average = sumWad / int256(N);
        int256 expected = average / int256(10 ** (18 - want));
        while (expected > max || expected < -max) {
            --want;
            expected = average / int256(10 ** (18 - want));
        }
        address[] memory all = new address[](3);
        (all[0], all[1], all[2]) = (client, client2, stranger);
        (uint64 c, int128 value, uint8 d_) = reputation.getSummary(agentId, all, "", "");
        assertEq(c, N, "count");
        assertEq(d_, want, "decimals");
        assertEq(value, expected, "average");
        assertTrue(value <= max && value >= -max, "within range");
    }

    function testFuzz_giveFeedback_IndexesCountPerClient(uint8 n, address who) public {
        vm.assume(who != agentOwner && who != address(0));
        n = uint8(bound(n, 1, 20));
        for (uint256 i; i < n; ++i) {
            _give(who, int128(int256(i)), 0, "", "");
        }
        assertEq(reputation.getLastIndex(agentId, who), n, "last index");
        assertEq(reputation.getClients(agentId).length, 1, "listed once");
        (int128 value,,,,) = reputation.readFeedback(agentId, who, n);
        assertEq(value, int128(int256(uint256(n) - 1)), "last value");
    }
}
