// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors releasePayment.tree.
contract ReleasePaymentTest is EscrowBase {
    function _reviewEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.reviewWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t) + 1);
        _expectRevertUnknown(_unknownId());
        escrow.releasePayment(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t) + 1);
        _expectRevertStale(id);
        escrow.releasePayment(id, _stale(t));
    }

    function test_RevertWhen_StatusNotCompleted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Completed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.warp(block.timestamp + 60 days);
            _expectRevertStatus(id, all[i]);
            escrow.releasePayment(id, t);
        }
    }

    function test_RevertWhen_ReviewWindowOpen() public {
        // it should revert with TaskEscrowTooEarly(updatedAt + reviewWindow + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        _expectRevertTooEarly(_reviewEnd(t) + 1);
        escrow.releasePayment(id, t);
    }

    function test_RevertWhen_AtReviewWindowEnd() public {
        // it should revert with TaskEscrowTooEarly(updatedAt + reviewWindow + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t));
        _expectRevertTooEarly(_reviewEnd(t) + 1);
        escrow.releasePayment(id, t);
    }

    function test_releasePayment() public {
        // it should set the status to Paid, updatedAt to now and executorShareBps to 10,000
        // it should pay the whole amount to the executor
        // it should emit a {TaskSettled} event (Paid, AutoReleased)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t) + 1);
        Balances memory before = _balances(t);

        _expectSettled(id, ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.AutoReleased, AMOUNT, 0);
        vm.prank(stranger);
        escrow.releasePayment(id, t);

        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        _assertPaidOut(t, before, AMOUNT, 0);
    }

    function test_RevertWhen_ReleasedTwice() public {
        // it should revert with TaskEscrowStaleTask
        // it should revert with TaskEscrowInvalidStatus
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t) + 1);
        escrow.releasePayment(id, t);
        _expectRevertStale(id);
        escrow.releasePayment(id, t);
        _expectRevertStatus(id, ITaskEscrow.Status.Paid);
        escrow.releasePayment(id, _settled(_copy(t), ITaskEscrow.Status.Paid, BPS));
        assertEq(usdc.balanceOf(executor), AMOUNT, "paid once");
    }

    function testFuzz_releasePayment_reviewWindowBoundary(uint32 reviewWindow, uint256 lateBy) public {
        // it should revert with TaskEscrowTooEarly(updatedAt + reviewWindow + 1)
        // it should set the status to Paid, updatedAt to now and executorShareBps to 10,000
        // it should pay the whole amount to the executor
        // it should emit a {TaskSettled} event (Paid, AutoReleased)
        reviewWindow = uint32(bound(reviewWindow, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = reviewWindow;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        t = _accept(id, t);
        t = _complete(id, t);
        uint256 end = _reviewEnd(t);

        vm.warp(end);
        _expectRevertTooEarly(end + 1);
        escrow.releasePayment(id, t);

        vm.warp(end + lateBy);
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.AutoReleased, AMOUNT, 0);
        escrow.releasePayment(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        _assertPaidOut(t, before, AMOUNT, 0);
    }
}
