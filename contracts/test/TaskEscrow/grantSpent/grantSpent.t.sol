// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors grantSpent.tree: grantState of the grant's digest, but a
/// marked first use that spent the whole budget (which writes no slot) counts
/// as the budget spent.
contract GrantSpentTest is GrantBase {
    function test_NeverUsed() public view {
        // it should return zero spent, not revoked
        (uint128 spent, bool revoked) = escrow.grantSpent(_grant());
        assertEq(spent, 0, "spent");
        assertFalse(revoked, "revoked");
    }

    function test_Funded() public {
        // it should return the sum of their amounts, as grantState does
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].amount = AMOUNT / 2;
        _createUnder(g, ps);
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertEq(spent, AMOUNT + AMOUNT / 2, "spent");
        assertFalse(revoked, "revoked");
        assertEq(spent, _spent(g), "as grantState");
        // Up to the whole budget, unmarked: the slot holds it.
        _createUnder(g, _grantParamsN(1));
        ps = _grantParamsN(1);
        ps[0].amount = AMOUNT / 2;
        _createUnder(g, ps);
        assertEq(_spentOf(g), BUDGET, "the budget");
        assertEq(_spent(g), BUDGET, "as grantState");
    }

    function test_MarkedFullUse() public {
        // it should return the budget spent, where grantState reads zero
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _fullMarkedParams(g));
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertEq(spent, BUDGET, "the budget");
        assertFalse(revoked, "revoked");
        assertEq(_spent(g), 0, "grantState: no slot");
        // Any budget, however it splits: the budget.
        ITaskEscrow.Grant memory odd = _grant();
        odd.nonce = 2;
        odd.budget = 7 * AMOUNT + 1;
        _createUnder(odd, _fullMarkedParams(odd));
        assertEq(_spentOf(odd), 7 * AMOUNT + 1, "the odd budget");
        assertEq(_spent(odd), 0, "grantState: no slot");
    }

    function test_MarkedFullUseThenRevoked() public {
        // it should return the budget spent and revoked
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _fullMarkedParams(g));
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertEq(spent, BUDGET, "the budget");
        assertTrue(revoked, "revoked");
        (spent, revoked) = escrow.grantState(_digest(g));
        assertEq(spent, 0, "grantState: zero spent");
        assertTrue(revoked, "grantState: revoked");
    }

    function test_MarkedPartialUse() public {
        // it should return what it spent, as grantState does
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _markedParamsN(g, 2);
        ps[1].amount = AMOUNT + AMOUNT / 2;
        _createUnder(g, ps);
        assertEq(_spentOf(g), 2 * AMOUNT + AMOUNT / 2, "what it spent, not the budget");
        assertEq(_spent(g), 2 * AMOUNT + AMOUNT / 2, "as grantState");
        // A later use that reaches the budget: the slot, as grantState.
        ps = _grantParamsN(1);
        ps[0].amount = AMOUNT / 2;
        _createUnder(g, ps);
        assertEq(_spentOf(g), BUDGET, "the budget");
        assertEq(_spent(g), BUDGET, "as grantState");
    }

    function test_Revoked() public {
        // it should return revoked, with what it spent before
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertEq(spent, 0, "never used: zero");
        assertTrue(revoked, "revoked");
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        _createUnder(h, _grantParamsN(1));
        vm.prank(sponsor);
        escrow.revokeGrant(h);
        (spent, revoked) = escrow.grantSpent(h);
        assertEq(spent, AMOUNT, "what it spent before");
        assertTrue(revoked, "revoked");
    }

    function test_OtherGrant() public {
        // it should return zero spent, the other grant's state untouched
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _fullMarkedParams(g));
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        (uint128 spent, bool revoked) = escrow.grantSpent(h);
        assertEq(spent, 0, "another nonce: its own digest, no mark");
        assertFalse(revoked, "another nonce: not revoked");
        // The same terms under another sponsor: another digest, another mark id.
        (spent,) = escrow.grantSpent(_grantOf(funder));
        assertEq(spent, 0, "another sponsor");
        assertEq(_spentOf(g), BUDGET, "g untouched");
    }

    function test_WhenATaskIsReferencedByTheDigestOutsideTheGrant() public {
        // it should return zero: only the grant itself makes its mark
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.createTask(_params(_digest(g)));
        assertEq(_spentOf(g), 0, "no mark, nothing funded");
        assertEq(_spent(g), 0, "grantState: nothing funded");
    }
}
