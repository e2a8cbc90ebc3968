// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract GetSummary_Unit_Test is ReputationBase {
    function _summary(address[] memory clients, string memory tag1, string memory tag2)
        internal
        view
        returns (uint64 count, int128 value, uint8 decimals)
    {
        return reputation.getSummary(agentId, clients, tag1, tag2);
    }

    function test_RevertWhen_NoClients() public {
        // it should revert with ReputationRegistryClientsRequired
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryClientsRequired.selector)
        );
        reputation.getSummary(agentId, new address[](0), "", "");
    }

    function test_getSummary_NothingMatches() public {
        // it should return zero count, value and decimals
        (uint64 count, int128 value, uint8 decimals) = _summary(_clients(client), "", "");
        assertEq(count, 0, "no entries");
        assertEq(value, 0, "value");
        assertEq(decimals, 0, "decimals");
        _give(client, 5, 3, TAG, "");
        (count, value, decimals) = _summary(_clients(client), "other", "");
        assertEq(count, 0, "no match");
        assertEq(value, 0, "value");
        assertEq(decimals, 0, "decimals");
    }

    function test_getSummary_FiltersClientsTagsAndRevoked() public {
        // it should count only the listed clients' unrevoked entries matching both tag filters
        // it should truncate the average toward zero
        _give(client, 80, 0, TAG, TAG_2);
        _give(client, 100, 0, TAG, "translate");
        _give(client, 10, 0, "other", TAG_2);
        _give(client2, 60, 0, TAG, TAG_2);
        _give(stranger, 0, 0, TAG, TAG_2);

        (uint64 count, int128 value,) = _summary(_clients(client), "", "");
        assertEq(count, 3, "all of client");
        assertEq(value, 63, "(80+100+10)/3 truncated");
        (count, value,) = _summary(_clients(client, client2), TAG, "");
        assertEq(count, 3, "tag1");
        assertEq(value, 80, "(80+100+60)/3");
        (count, value,) = _summary(_clients(client, client2), TAG, TAG_2);
        assertEq(count, 2, "both tags");
        assertEq(value, 70, "(80+60)/2");
        (count, value,) = _summary(_clients(client, client2), "", TAG_2);
        assertEq(count, 3, "tag2 only");

        vm.prank(client);
        reputation.revokeFeedback(agentId, 2);
        (count, value,) = _summary(_clients(client, client2), TAG, "");
        assertEq(count, 2, "revoked skipped");
        assertEq(value, 70, "(80+60)/2");
    }

    function test_getSummary_ModeDecimals() public {
        // it should average them at the decimals most entries use (fewest on a tie)
        _give(client, 9977, 2, "", ""); // 99.77
        _give(client, 9900, 2, "", ""); // 99.00
        _give(client2, 1, 0, "", ""); // 1
        (uint64 count, int128 value, uint8 decimals) = _summary(_clients(client, client2), "", "");
        assertEq(count, 3, "count");
        assertEq(decimals, 2, "mode decimals");
        assertEq(value, 6659, "(99.77+99+1)/3 = 66.59 truncated");

        // A tie goes to the fewest decimals.
        _give(stranger, 3, 0, "", "");
        (, value, decimals) = reputation.getSummary(agentId, _clientsOf3(), "", "");
        assertEq(decimals, 0, "tie: fewest decimals");
        assertEq(value, 50, "(99.77+99+1+3)/4 = 50.69 truncated");
    }

    function test_getSummary_NegativeTruncatesTowardZero() public {
        // it should truncate the average toward zero
        _give(client, -1, 0, "", "");
        _give(client2, -2, 0, "", "");
        (, int128 value,) = _summary(_clients(client, client2), "", "");
        assertEq(value, -1, "-1.5 toward zero");
    }

    function _clientsOf3() internal view returns (address[] memory l) {
        l = new address[](3);
        (l[0], l[1], l[2]) = (client, client2, stranger);
    }

    /// @dev One large whole value among tiny 18-decimal ones: at 18 decimals the
    /// average would not fit an int128 (this reverted with SafeCast's overflow).
    function test_getSummary_MixedDecimalsFit() public {
        // it should give it at the most decimals below them where it fits, never reverting
        int128 max = reputation.MAX_ABS_VALUE();
        _give(client, max, 0, "", "");
        _give(client2, 1, 18, "", "");
        _give(stranger, 1, 18, "", "");
        (uint64 count, int128 value, uint8 decimals) = reputation.getSummary(agentId, _clientsOf3(), "", "");
        assertEq(count, 3, "count");
        assertEq(decimals, 0, "at 1 decimal it would be 3.3e38: too large");
        assertEq(value, 33_333_333_333_333_333_333_333_333_333_333_333_333, "(1e38 + 2e-18) / 3, truncated");

        // Smaller, it stops as soon as it fits: 1e37 / 3 = 3.3e36 fits at 1 decimal.
        _give(client, -max + 1e37, 0, "", "");
        (count, value, decimals) = reputation.getSummary(agentId, _clientsOf3(), "", "");
        assertEq(count, 4, "count");
        assertEq(decimals, 0, "a tie of two and two: the fewest decimals");
        _give(client2, 1, 18, "", "");
        (count, value, decimals) = reputation.getSummary(agentId, _clientsOf3(), "", "");
        assertEq(decimals, 1, "1e37 / 5 = 2e36 fits at 1 decimal, not at 2");
        assertEq(value, 2e37, "2e36 at 1 decimal");
    }
}
