// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors cancelTask.tree.
contract CancelTaskTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.prank(client);
        _expectRevertUnknown(_unknownId());
        escrow.cancelTask(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(client);
        _expectRevertStale(id);
        escrow.cancelTask(id, _stale(t));
    }

    function test_RevertWhen_CallerNotClient() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        address[5] memory others = [owner, funder, executor, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.cancelTask(id, t);
        }
    }

    function test_RevertWhen_StatusNotCreated() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(client);
            _expectRevertStatus(id, all[i]);
            escrow.cancelTask(id, t);
        }
    }

    function _cancel(uint256 id, ITaskEscrow.Task memory t) private {
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Cancelled, ITaskEscrow.Settlement.Cancelled, 0, AMOUNT);
        vm.prank(client);
        escrow.cancelTask(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Cancelled, 0));
        _assertPaidOut(t, before, 0, AMOUNT);
    }

    function test_cancelTask() public {
        // it should set the status to Cancelled, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Cancelled, Cancelled)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(block.timestamp + 1 hours);
        _cancel(id, t);
    }

    function test_cancelTask_afterDeadline() public {
        // it should set the status to Cancelled, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Cancelled, Cancelled)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1 days);
        _cancel(id, t);
    }

    function test_cancelTask_afterReassign() public {
        // it should set the status to Cancelled, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Cancelled, Cancelled)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        uint40 newDeadline = uint40(block.timestamp + 1 days);
        vm.prank(client);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        t.executor = executor2;
        t.deadline = newDeadline;
        t.status = ITaskEscrow.Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _cancel(id, t);
    }

    function test_RevertWhen_AcceptedThenCancelled() public {
        // it should revert with TaskEscrowInvalidStatus
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.prank(client);
        _expectRevertStatus(id, ITaskEscrow.Status.Accepted);
        escrow.cancelTask(id, t);
    }
}
