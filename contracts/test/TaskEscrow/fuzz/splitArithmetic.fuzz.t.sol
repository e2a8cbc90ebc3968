// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice The split of every ruling path, for any amount and any share: the
/// executor gets floor(amount * bps / 10,000), the funder the rest, the sum is
/// exact, the escrow ends empty and the terminal status follows the shares paid.
contract SplitArithmeticTest is EscrowBase {
    function _disputedWith(uint128 amount) private returns (uint256 id, ITaskEscrow.Task memory t) {
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        (id, t) = _create(p);
        t = _complete(id, _accept(id, t));
        t = _dispute(id, t);
    }

    /// @dev Checks the payout since `before` against the split rule from first principles.
    function _assertSplit(uint256 id, ITaskEscrow.Task memory t, Balances memory before, uint16 bps)
        private
        view
    {
        Balances memory b = _balances(t);
        uint256 toExecutor = b.executor - before.executor;
        uint256 toFunder = b.funder - before.funder;

        // floor: toExecutor * 10_000 <= amount * bps < (toExecutor + 1) * 10_000
        assertLe(toExecutor * BPS, uint256(t.amount) * bps, "executor share not above the ruling");
        assertGe(
            (toExecutor + 1) * BPS,
            uint256(t.amount) * bps + 1,
            "executor share rounded down by less than a unit"
        );
        assertEq(toExecutor + toFunder, t.amount, "sum is the amount");
        assertEq(b.escrow, 0, "escrow empty");

        ITaskEscrow.Status status = toFunder == 0
            ? ITaskEscrow.Status.Paid
            : (toExecutor == 0 ? ITaskEscrow.Status.Refunded : ITaskEscrow.Status.Split);
        _assertStored(id, _settled(t, status, bps));
    }

    function _boundInputs(uint128 amount, uint16 bps) private pure returns (uint128, uint16) {
        return (uint128(bound(amount, 1, type(uint128).max)), uint16(bound(bps, 0, BPS)));
    }

    function testFuzz_resolveDispute_split(uint128 amount, uint16 bps) public {
        (amount, bps) = _boundInputs(amount, bps);
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(amount);
        Balances memory before = _balances(t);
        uint128 toExecutor = _toExecutor(amount, bps);

        _expectSettled(
            id, _terminal(amount, bps), ITaskEscrow.Settlement.Ruling, toExecutor, amount - toExecutor
        );
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, bps, "r");
        _assertSplit(id, t, before, bps);
    }

    function testFuzz_resolveAppeal_split(uint128 amount, uint16 ruled, uint16 bps) public {
        (amount, bps) = _boundInputs(amount, bps);
        ruled = uint16(bound(ruled, 0, BPS));
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(amount);
        t = _rule(id, t, ruled);
        t = _appeal(id, t, executor);
        Balances memory before = _balances(t);
        uint128 toExecutor = _toExecutor(amount, bps);

        _expectSettled(
            id, _terminal(amount, bps), ITaskEscrow.Settlement.AppealRuling, toExecutor, amount - toExecutor
        );
        vm.prank(appealArbiter);
        escrow.resolveAppeal(id, t, bps, "r");
        _assertSplit(id, t, before, bps);
    }

    function testFuzz_finalizeRuling_split(uint128 amount, uint16 bps, bool appealed) public {
        (amount, bps) = _boundInputs(amount, bps);
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(amount);
        t = _rule(id, t, bps);
        if (appealed) {
            t = _appeal(id, t, client);
            vm.warp(uint256(t.updatedAt) + t.appealRulingWindow + 1);
        } else {
            vm.warp(uint256(t.updatedAt) + t.appealWindow + 1);
        }
        Balances memory before = _balances(t);
        uint128 toExecutor = _toExecutor(amount, bps);

        _expectSettled(
            id,
            _terminal(amount, bps),
            ITaskEscrow.Settlement.RulingFinalized,
            toExecutor,
            amount - toExecutor
        );
        escrow.finalizeRuling(id, t);
        _assertSplit(id, t, before, bps);
    }

    /// @dev Dust: a positive share too small to pay a unit refunds in full (Refunded).
    function test_resolveDispute_dustGoesToFunder() public {
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(1);
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Refunded, ITaskEscrow.Settlement.Ruling, 0, 1);
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, BPS - 1, "r");
        _assertSplit(id, t, before, BPS - 1);
    }

    /// @dev Rounding favours the funder by less than one unit.
    function test_resolveDispute_roundsDownForExecutor() public {
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(3);
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Split, ITaskEscrow.Settlement.Ruling, 1, 2);
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, 5000, "r");
        _assertSplit(id, t, before, 5000);
    }

    /// @dev The largest amount at the smallest non-zero share does not overflow.
    function test_resolveDispute_maxAmount() public {
        _setWindows(DISPUTE_WINDOW, 0);
        uint128 amount = type(uint128).max;
        (uint256 id, ITaskEscrow.Task memory t) = _disputedWith(amount);
        Balances memory before = _balances(t);
        uint128 toExecutor = _toExecutor(amount, 9999);
        _expectSettled(
            id, ITaskEscrow.Status.Split, ITaskEscrow.Settlement.Ruling, toExecutor, amount - toExecutor
        );
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, 9999, "r");
        _assertSplit(id, t, before, 9999);
    }
}
