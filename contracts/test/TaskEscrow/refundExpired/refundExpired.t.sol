// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors refundExpired.tree.
contract RefundExpiredTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        _expectRevertUnknown(_unknownId());
        escrow.refundExpired(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        _expectRevertStale(id);
        escrow.refundExpired(id, _stale(t));
    }

    function test_RevertWhen_StatusNeitherCreatedNorAccepted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created || all[i] == ITaskEscrow.Status.Accepted) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.warp(uint256(t.deadline) + 1);
            _expectRevertStatus(id, all[i]);
            escrow.refundExpired(id, t);
        }
    }

    function test_RevertWhen_DeadlineNotPassed() public {
        // it should revert with TaskEscrowTooEarly(deadline + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _expectRevertTooEarly(uint256(t.deadline) + 1);
        escrow.refundExpired(id, t);
        vm.warp(t.deadline);
        _expectRevertTooEarly(uint256(t.deadline) + 1);
        escrow.refundExpired(id, t);
    }

    function _refund(uint256 id, ITaskEscrow.Task memory t) private {
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Expired, ITaskEscrow.Settlement.Expired, 0, AMOUNT);
        vm.prank(stranger);
        escrow.refundExpired(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Expired, 0));
        _assertPaidOut(t, before, 0, AMOUNT);
    }

    function test_refundExpired_created() public {
        // it should set the status to Expired, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Expired, Expired)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        _refund(id, t);
    }

    function test_refundExpired_accepted() public {
        // it should set the status to Expired, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Expired, Expired)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        _refund(id, t);
    }

    function test_RevertWhen_CompletedAfterExpiry() public {
        // it should shut out a late completion
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        escrow.refundExpired(id, t);
        ITaskEscrow.Task memory expired = _settled(_copy(t), ITaskEscrow.Status.Expired, 0);
        vm.prank(executor);
        _expectRevertStatus(id, ITaskEscrow.Status.Expired);
        escrow.completeTask(id, expired, RESULT);
    }

    function testFuzz_refundExpired_deadlineBoundary(uint40 lifetime, uint40 lateBy, bool accepted) public {
        // it should revert with TaskEscrowTooEarly(deadline + 1)
        lifetime = uint40(bound(lifetime, 1, HORIZON));
        lateBy = uint40(bound(lateBy, 1, 365 days));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp) + lifetime;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        if (accepted) t = _accept(id, t);

        vm.warp(p.deadline);
        _expectRevertTooEarly(uint256(p.deadline) + 1);
        escrow.refundExpired(id, t);

        vm.warp(uint256(p.deadline) + lateBy);
        _refund(id, t);
    }
}
