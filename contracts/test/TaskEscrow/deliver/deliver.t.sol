// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors deliver.tree: the executor's fast path, accept and complete
/// in one call, with every check acceptTask and completeTask make.
contract DeliverTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertUnknown(_unknownId());
        escrow.deliver(_unknownId(), t, RESULT);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertStale(id);
        escrow.deliver(id, _stale(t), RESULT);
    }

    function test_RevertWhen_CallerNotExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        address[6] memory others = [funder, client, executor2, arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.deliver(id, t, RESULT);
        }
    }

    function test_RevertWhen_StatusNotCreated() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(t.executor);
            _expectRevertStatus(id, all[i]);
            escrow.deliver(id, t, RESULT);
        }
    }

    function test_RevertWhen_PastDeadline() public {
        // it should revert with TaskEscrowTooLate
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(executor);
        _expectRevertTooLate(t.deadline);
        escrow.deliver(id, t, RESULT);
    }

    function test_deliver_atTheDeadline() public {
        // it should set the status to Completed, updatedAt to now and the result hash
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(t.deadline);
        _deliver(id, t);
    }

    function test_deliver() public {
        // it should set the status to Completed, updatedAt to now and the result hash
        // it should move no funds
        // it should emit a {TaskCompleted} event (no {TaskAccepted})
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(block.timestamp + 1 hours);
        uint256 held = usdc.balanceOf(address(escrow));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCompleted(id, executor, RESULT, uint40(block.timestamp));
        vm.recordLogs();
        t = _deliver(id, t);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            assertTrue(logs[i].topics[0] != ITaskEscrow.TaskAccepted.selector, "no TaskAccepted");
        }
        assertEq(usdc.balanceOf(address(escrow)), held, "no funds move");
        // The review window runs from delivery: the client can approve.
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        _assertStatus(id, _settled(t, ITaskEscrow.Status.Paid, BPS), ITaskEscrow.Status.Paid);
    }

    function test_deliver_whilePaused() public {
        // it should set the status to Completed, updatedAt to now and the result hash
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(owner);
        escrow.pause();
        // Pausing stops new money, not work on money already escrowed.
        _deliver(id, t);
    }
}
