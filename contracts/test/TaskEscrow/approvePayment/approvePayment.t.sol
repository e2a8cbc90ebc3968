// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors approvePayment.tree.
contract ApprovePaymentTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _completed();
        vm.prank(client);
        _expectRevertUnknown(_unknownId());
        escrow.approvePayment(_unknownId(), t, RATING);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.prank(client);
        _expectRevertStale(id);
        escrow.approvePayment(id, _stale(t), RATING);
    }

    function test_RevertWhen_CallerNotClient() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        address[5] memory others = [funder, executor, executor2, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.approvePayment(id, t, RATING);
        }
    }

    function test_RevertWhen_StatusNotCompleted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Completed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(client);
            _expectRevertStatus(id, all[i]);
            escrow.approvePayment(id, t, RATING);
        }
    }

    function test_RevertWhen_RatingAboveMax() public {
        // it should revert with TaskEscrowInvalidRating, paying nobody
        assertEq(escrow.MAX_RATING(), 100, "MAX_RATING");
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        uint256 held = usdc.balanceOf(address(escrow));
        uint8[3] memory bad = [101, 200, type(uint8).max];
        for (uint256 i; i < bad.length; ++i) {
            vm.prank(client);
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidRating.selector, bad[i]));
            escrow.approvePayment(id, t, bad[i]);
        }
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), held, "nobody paid");
        assertEq(usdc.balanceOf(executor), 0, "the executor unpaid");
        // The task is still Completed: an approval within range goes through.
        vm.prank(client);
        escrow.approvePayment(id, t, 100);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
    }

    function test_approvePayment_carriesTheRating() public {
        // it should carry the client's rating, any from 0 to MAX_RATING, in {TaskSettled}
        uint8[4] memory ratings = [0, 1, 55, 100];
        for (uint256 i; i < ratings.length; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = _completed();
            vm.expectEmit(address(escrow));
            emit ITaskEscrow.TaskSettled(
                id,
                ITaskEscrow.Status.Paid,
                ITaskEscrow.Settlement.Approved,
                AMOUNT,
                0,
                ratings[i],
                uint40(block.timestamp)
            );
            vm.prank(client);
            escrow.approvePayment(id, t, ratings[i]);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        }
    }

    function test_approvePayment() public {
        // it should set the status to Paid, updatedAt to now and executorShareBps to 10,000
        // it should pay the whole amount to the executor and nothing to the funder
        // it should leave no tokens for the task in the escrow
        // it should emit a {TaskSettled} event (Paid, Approved)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(block.timestamp + 1 hours);
        Balances memory before = _balances(t);

        _expectSettled(id, ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.Approved, AMOUNT, 0);
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);

        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        _assertPaidOut(t, before, AMOUNT, 0);
    }

    function test_approvePayment_afterReviewWindow() public {
        // it should set the status to Paid, updatedAt to now and executorShareBps to 10,000
        // it should pay the whole amount to the executor and nothing to the funder
        // it should emit a {TaskSettled} event (Paid, Approved)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(uint256(t.updatedAt) + t.reviewWindow + 30 days);
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.Approved, AMOUNT, 0);
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        _assertPaidOut(t, before, AMOUNT, 0);
    }

    function test_RevertWhen_ApprovedTwice() public {
        // it should revert with TaskEscrowStaleTask
        // it should revert with TaskEscrowInvalidStatus
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        ITaskEscrow.Task memory paid = _settled(_copy(t), ITaskEscrow.Status.Paid, BPS);

        // The pre-payment state is stale now; the paid state is terminal.
        vm.prank(client);
        _expectRevertStale(id);
        escrow.approvePayment(id, t, RATING);
        vm.prank(client);
        _expectRevertStatus(id, ITaskEscrow.Status.Paid);
        escrow.approvePayment(id, paid, RATING);
        assertEq(usdc.balanceOf(executor), AMOUNT, "paid once");
    }

    function testFuzz_approvePayment_paysTheWholeAmount(uint128 amount) public {
        // it should pay the whole amount to the executor and nothing to the funder
        // it should leave no tokens for the task in the escrow
        amount = uint128(bound(amount, 1, type(uint128).max));
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        t = _accept(id, t);
        t = _complete(id, t);
        Balances memory before = _balances(t);

        _expectSettled(id, ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.Approved, amount, 0);
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);

        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        _assertPaidOut(t, before, amount, 0);
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow empty");
    }
}
