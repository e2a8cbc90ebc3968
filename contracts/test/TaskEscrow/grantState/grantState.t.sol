// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors grantState.tree.
contract GrantStateTest is GrantBase {
    function test_NeverUsed() public view {
        // it should return zero spent, not revoked
        (uint128 spent, bool revoked) = escrow.grantState(_digest(_grant()));
        assertEq(spent, 0, "spent");
        assertFalse(revoked, "revoked");
    }

    function test_Funded() public {
        // it should return the sum of their amounts
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].amount = AMOUNT / 2;
        _createUnder(g, ps);
        (uint128 spent, bool revoked) = escrow.grantState(_digest(g));
        assertEq(spent, AMOUNT + AMOUNT / 2, "spent");
        assertFalse(revoked, "revoked");
    }

    function test_Revoked() public {
        // it should return revoked, with what it spent before
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _grantParamsN(1));
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        (uint128 spent, bool revoked) = escrow.grantState(_digest(g));
        assertEq(spent, AMOUNT, "spent");
        assertTrue(revoked, "revoked");
    }
}
