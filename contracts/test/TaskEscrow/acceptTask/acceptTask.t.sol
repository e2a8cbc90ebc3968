// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors acceptTask.tree.
contract AcceptTaskTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertUnknown(_unknownId());
        escrow.acceptTask(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertStale(id);
        escrow.acceptTask(id, _stale(t));
    }

    function test_RevertWhen_CallerNotExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        address[4] memory others = [funder, client, executor2, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.acceptTask(id, t);
        }
    }

    function test_RevertWhen_StatusNotCreated() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(executor);
            _expectRevertStatus(id, all[i]);
            escrow.acceptTask(id, t);
        }
    }

    function test_RevertWhen_DeadlinePassed() public {
        // it should revert with TaskEscrowTooLate(deadline)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(executor);
        _expectRevertTooLate(t.deadline);
        escrow.acceptTask(id, t);
    }

    function test_acceptTask_atDeadline() public {
        // it should set the status to Accepted and updatedAt to now
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(t.deadline);
        t = _accept(id, t);
        assertEq(t.updatedAt, t.deadline, "accepted at the deadline");
    }

    function test_acceptTask() public {
        // it should set the status to Accepted and updatedAt to now
        // it should store the new hash
        // it should move no funds
        // it should emit a {TaskAccepted} event
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(block.timestamp + 1 hours);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskAccepted(id, executor, uint40(block.timestamp));
        vm.prank(executor);
        escrow.acceptTask(id, t);

        t.status = ITaskEscrow.Status.Accepted;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "no funds move");
    }

    function test_acceptTask_byReassignedExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 newDeadline = uint40(block.timestamp + 2 days);
        vm.prank(client);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        t.executor = executor2;
        t.deadline = newDeadline;
        t.updatedAt = uint40(block.timestamp);

        vm.prank(executor);
        _expectRevertUnauthorized(executor);
        escrow.acceptTask(id, t);

        t = _accept(id, t);
        assertEq(t.executor, executor2, "new executor accepted");
    }

    function testFuzz_acceptTask_deadlineBoundary(uint40 lifetime, uint40 lateBy) public {
        // it should revert with TaskEscrowTooLate(deadline)
        // it should set the status to Accepted and updatedAt to now
        lifetime = uint40(bound(lifetime, 1, HORIZON));
        lateBy = uint40(bound(lateBy, 1, 365 days));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp) + lifetime;
        (uint256 onTime, ITaskEscrow.Task memory a) = _create(p);
        p.ref = _nextRef();
        (uint256 late, ITaskEscrow.Task memory b) = _create(p);

        vm.warp(p.deadline);
        _accept(onTime, a);

        vm.warp(uint256(p.deadline) + lateBy);
        vm.prank(executor);
        _expectRevertTooLate(p.deadline);
        escrow.acceptTask(late, b);
    }
}
