// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors completeTask.tree.
contract CompleteTaskTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _accepted();
        vm.prank(executor);
        _expectRevertUnknown(_unknownId());
        escrow.completeTask(_unknownId(), t, RESULT);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.prank(executor);
        _expectRevertStale(id);
        escrow.completeTask(id, _stale(t), RESULT);
    }

    function test_RevertWhen_CallerNotExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        address[4] memory others = [funder, client, executor2, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.completeTask(id, t, RESULT);
        }
    }

    function test_RevertWhen_StatusNotAccepted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Accepted) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(executor);
            _expectRevertStatus(id, all[i]);
            escrow.completeTask(id, t, RESULT);
        }
    }

    function test_RevertWhen_DeadlinePassed() public {
        // it should revert with TaskEscrowTooLate(deadline)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(executor);
        _expectRevertTooLate(t.deadline);
        escrow.completeTask(id, t, RESULT);
    }

    function test_completeTask_atDeadline() public {
        // it should set the status to Completed and updatedAt to now (starting the review window)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(t.deadline);
        t = _complete(id, t);
        assertEq(t.updatedAt, t.deadline, "completed at the deadline");
    }

    function test_completeTask() public {
        // it should set the status to Completed and updatedAt to now (starting the review window)
        // it should store resultHash = keccak256(resultURI)
        // it should move no funds
        // it should emit a {TaskCompleted} event carrying the result URI
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(block.timestamp + 3 hours);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCompleted(id, executor, RESULT, uint40(block.timestamp));
        vm.prank(executor);
        escrow.completeTask(id, t, RESULT);

        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(RESULT));
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "no funds move");
    }

    function testFuzz_completeTask_resultHash(string memory resultURI) public {
        // it should store resultHash = keccak256(resultURI)
        // it should emit a {TaskCompleted} event carrying the result URI
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCompleted(id, executor, resultURI, uint40(block.timestamp));
        vm.prank(executor);
        escrow.completeTask(id, t, resultURI);
        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(resultURI));
        _assertStored(id, t);
    }

    function testFuzz_completeTask_deadlineBoundary(uint40 lifetime, uint40 lateBy) public {
        // it should revert with TaskEscrowTooLate(deadline)
        lifetime = uint40(bound(lifetime, 1, HORIZON));
        lateBy = uint40(bound(lateBy, 1, 365 days));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp) + lifetime;
        (uint256 onTime, ITaskEscrow.Task memory a) = _create(p);
        a = _accept(onTime, a);
        p.ref = _nextRef();
        (uint256 late, ITaskEscrow.Task memory b) = _create(p);
        b = _accept(late, b);

        vm.warp(p.deadline);
        _complete(onTime, a);

        vm.warp(uint256(p.deadline) + lateBy);
        vm.prank(executor);
        _expectRevertTooLate(p.deadline);
        escrow.completeTask(late, b, RESULT);
    }
}
