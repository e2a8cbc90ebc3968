// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors declineTask.tree.
contract DeclineTaskTest is EscrowBase {
    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertUnknown(_unknownId());
        escrow.declineTask(_unknownId(), t, DECLINE_REASON);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        _expectRevertStale(id);
        escrow.declineTask(id, _stale(t), DECLINE_REASON);
    }

    function test_RevertWhen_CallerNotExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        address[7] memory others = [client, funder, arbiter, appealArbiter, owner, executor2, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.declineTask(id, t, DECLINE_REASON);
        }
        // The same for an accepted task: only its executor may give it back.
        (id, t) = _accepted();
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.declineTask(id, t, DECLINE_REASON);
        }
        _assertStored(id, t);
    }

    /// @dev A reassigned task's former executor has no say any more; the new one has.
    function test_RevertWhen_CallerIsTheFormerExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        t = _reassign(id, t);
        vm.prank(executor);
        _expectRevertUnauthorized(executor);
        escrow.declineTask(id, t, DECLINE_REASON);
        _decline(id, t, executor2);
    }

    function test_RevertWhen_StatusNeitherCreatedNorAccepted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created || all[i] == ITaskEscrow.Status.Accepted) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(executor);
            _expectRevertStatus(id, all[i]);
            escrow.declineTask(id, t, DECLINE_REASON);
        }
    }

    function test_RevertWhen_AcceptedAndDeadlinePassed() public {
        // it should revert with TaskEscrowTooLate(deadline)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(executor);
        _expectRevertTooLate(t.deadline);
        escrow.declineTask(id, t, DECLINE_REASON);
        // The way out then is the expiry refund, open to anyone.
        escrow.refundExpired(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Expired, 0));
    }

    /// @dev Declines `t` as `who` and checks the events, their order, the state and the money.
    function _decline(uint256 id, ITaskEscrow.Task memory t, address who) private {
        Balances memory before = _balances(t);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskDeclined(id, who, DECLINE_REASON, uint40(block.timestamp));
        _expectSettled(id, ITaskEscrow.Status.Declined, ITaskEscrow.Settlement.Declined, 0, t.amount);
        vm.recordLogs();
        vm.prank(who);
        escrow.declineTask(id, t, DECLINE_REASON);
        _assertEventOrder();
        _assertStored(id, _settled(t, ITaskEscrow.Status.Declined, 0));
        _assertPaidOut(t, before, 0, t.amount);
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow holds nothing");
    }

    /// @dev The escrow logged exactly {TaskDeclined} then {TaskSettled}; the token, one transfer.
    function _assertEventOrder() private {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bytes32[] memory sigs = new bytes32[](logs.length);
        uint256 n;
        uint256 transfers;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(escrow)) sigs[n++] = logs[i].topics[0];
            else if (logs[i].emitter == address(usdc)) ++transfers;
        }
        assertEq(n, 2, "two escrow events");
        assertEq(sigs[0], ITaskEscrow.TaskDeclined.selector, "the decline first");
        assertEq(sigs[1], ITaskEscrow.TaskSettled.selector, "then the settlement");
        assertEq(transfers, 1, "one refund transfer");
    }

    function _reassign(uint256 id, ITaskEscrow.Task memory t) private returns (ITaskEscrow.Task memory) {
        uint40 newDeadline = uint40(block.timestamp + 1 days);
        vm.prank(client);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        t.executor = executor2;
        t.deadline = newDeadline;
        t.status = ITaskEscrow.Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        return t;
    }

    function test_declineTask_created() public {
        // it should set the status to Declined, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder and leave the escrow holding nothing of it
        // it should emit a {TaskDeclined} event with the reason, then a {TaskSettled} event (Declined,
        // Declined)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(block.timestamp + 1 hours);
        _decline(id, t, executor);
    }

    /// @dev Past its deadline a Created task has expired: a decline would turn the
    /// executor's Expired mark into a Declined one, so only the expiry refund is left.
    function test_RevertWhen_CreatedAndDeadlinePassed() public {
        // it should revert with TaskEscrowTooLate(deadline)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(executor);
        _expectRevertTooLate(t.deadline);
        escrow.declineTask(id, t, DECLINE_REASON);
        _assertStored(id, t);
        escrow.refundExpired(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Expired, 0));
    }

    /// @dev Up to and including the deadline, a Created task can still be given back.
    function test_declineTask_createdAtDeadline() public {
        // it should set the status to Declined, updatedAt to now and executorShareBps to 0
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(t.deadline);
        _decline(id, t, executor);
    }

    function test_declineTask_accepted() public {
        // it should set the status to Declined, updatedAt to now and executorShareBps to 0
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(block.timestamp + 1 hours);
        _decline(id, t, executor);
    }

    function test_declineTask_acceptedAtDeadline() public {
        // it should set the status to Declined, updatedAt to now and executorShareBps to 0
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(t.deadline);
        _decline(id, t, executor);
    }

    function test_declineTask_afterReassign() public {
        // it should set the status to Declined, updatedAt to now and executorShareBps to 0
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        t = _reassign(id, t);
        _decline(id, t, executor2);
    }

    function test_declineTask_whilePaused() public {
        // it should keep working while the escrow is paused
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        _pause();
        _decline(id, t, executor);
        assertTrue(escrow.paused(), "still paused");
    }

    /// @dev The funder gets back exactly what it put in, and nothing of another task moves.
    function test_declineTask_refundsOnlyThisTask() public {
        // it should refund the whole amount to the funder and leave the escrow holding nothing of it
        (uint256 other, ITaskEscrow.Task memory o) = _accepted();
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint256 funderBefore = usdc.balanceOf(funder);
        vm.prank(executor);
        escrow.declineTask(id, t, "");
        assertEq(usdc.balanceOf(funder), funderBefore + AMOUNT, "funder refunded the amount");
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "the other task's amount stays");
        _assertStored(other, o);
    }

    function test_RevertWhen_DeliveredAfterDecline() public {
        // it should shut out every later call on the task (a late delivery, a second decline)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(executor);
        escrow.declineTask(id, t, DECLINE_REASON);
        ITaskEscrow.Task memory declined = _settled(_copy(t), ITaskEscrow.Status.Declined, 0);
        vm.startPrank(executor);
        _expectRevertStatus(id, ITaskEscrow.Status.Declined);
        escrow.deliver(id, declined, RESULT);
        _expectRevertStatus(id, ITaskEscrow.Status.Declined);
        escrow.declineTask(id, declined, DECLINE_REASON);
        vm.stopPrank();
        _expectRevertStatus(id, ITaskEscrow.Status.Declined);
        escrow.refundExpired(id, declined);
    }

    /// @dev Any amount, any reason, any time: a Created or Accepted task is refunded
    /// in full up to and including its deadline, and refused after it.
    function testFuzz_declineTask(
        uint128 amount,
        uint40 lifetime,
        uint40 elapsed,
        bool accepted,
        string memory reason
    ) public {
        // it should revert with TaskEscrowTooLate(deadline)
        // it should emit a {TaskDeclined} event with the reason, then a {TaskSettled} event (Declined,
        // Declined)
        amount = uint128(bound(amount, 1, type(uint128).max));
        lifetime = uint40(bound(lifetime, 1, HORIZON));
        elapsed = uint40(bound(elapsed, 0, uint256(lifetime) * 2));
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        p.deadline = uint40(block.timestamp) + lifetime;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        if (accepted) t = _accept(id, t);
        vm.warp(block.timestamp + elapsed);

        if (block.timestamp > t.deadline) {
            vm.prank(executor);
            _expectRevertTooLate(t.deadline);
            escrow.declineTask(id, t, reason);
            _assertStored(id, t);
            return;
        }
        Balances memory before = _balances(t);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskDeclined(id, executor, reason, uint40(block.timestamp));
        _expectSettled(id, ITaskEscrow.Status.Declined, ITaskEscrow.Settlement.Declined, 0, amount);
        vm.prank(executor);
        escrow.declineTask(id, t, reason);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Declined, 0));
        _assertPaidOut(t, before, 0, amount);
    }
}
