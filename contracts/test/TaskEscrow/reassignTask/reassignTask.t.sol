// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors reassignTask.tree.
contract ReassignTaskTest is EscrowBase {
    function _newDeadline() private view returns (uint40) {
        return uint40(block.timestamp + 2 days);
    }

    function _expectRevertReassign(
        uint256 id,
        ITaskEscrow.Task memory t,
        address to,
        uint40 deadline_,
        bytes memory err
    ) private {
        vm.prank(client);
        vm.expectRevert(err);
        escrow.reassignTask(id, t, to, deadline_, CAPABILITY);
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _create();
        vm.prank(client);
        _expectRevertUnknown(_unknownId());
        escrow.reassignTask(_unknownId(), t, executor2, _newDeadline(), CAPABILITY);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.prank(client);
        _expectRevertStale(id);
        escrow.reassignTask(id, _stale(t), executor2, _newDeadline(), CAPABILITY);
    }

    function test_RevertWhen_CallerNotClient() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 newDeadline = _newDeadline();
        address[6] memory others = [owner, funder, executor, executor2, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        }
    }

    function test_RevertWhen_AcceptedAndDeadlineNotPassed() public {
        // it should revert with TaskEscrowTooEarly(deadline + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        uint40 newDeadline = _newDeadline();
        vm.prank(client);
        _expectRevertTooEarly(uint256(t.deadline) + 1);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);

        vm.warp(t.deadline);
        newDeadline = _newDeadline();
        vm.prank(client);
        _expectRevertTooEarly(uint256(t.deadline) + 1);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
    }

    function test_RevertWhen_StatusNeitherCreatedNorAccepted() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Created || all[i] == ITaskEscrow.Status.Accepted) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            uint40 newDeadline = _newDeadline();
            vm.prank(client);
            _expectRevertStatus(id, all[i]);
            escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        }
    }

    function test_RevertWhen_NewExecutorZero() public {
        // it should revert with TaskEscrowZeroAddress
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _expectRevertReassign(
            id,
            t,
            address(0),
            _newDeadline(),
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector)
        );
    }

    function test_RevertWhen_NewExecutorIsClient() public {
        // it should revert with TaskEscrowSelfDealing
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _expectRevertReassign(
            id,
            t,
            client,
            _newDeadline(),
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, client)
        );
    }

    function test_RevertWhen_NewExecutorIsFunder() public {
        // it should revert with TaskEscrowSelfDealing
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _expectRevertReassign(
            id,
            t,
            funder,
            _newDeadline(),
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, funder)
        );
    }

    function test_RevertWhen_NewDeadlineIsNow() public {
        // it should revert with TaskEscrowInvalidDeadline
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 d = uint40(block.timestamp);
        _expectRevertReassign(
            id, t, executor2, d, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, d)
        );
    }

    function test_RevertWhen_NewDeadlineBeyondHorizon() public {
        // it should revert with TaskEscrowInvalidDeadline
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 d = uint40(block.timestamp + HORIZON + 1);
        _expectRevertReassign(
            id, t, executor2, d, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, d)
        );
    }

    function _reassign(uint256 id, ITaskEscrow.Task memory t, address to, uint40 newDeadline)
        private
        returns (ITaskEscrow.Task memory)
    {
        uint256 escrowBefore = usdc.balanceOf(address(escrow));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskReassigned(id, t.executor, to, newDeadline, uint40(block.timestamp));
        vm.prank(client);
        escrow.reassignTask(id, t, to, newDeadline, CAPABILITY);
        t.executor = to;
        t.deadline = newDeadline;
        t.status = ITaskEscrow.Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "no funds move");
        return t;
    }

    function test_reassignTask_created() public {
        // it should set executor and deadline, the status to Created and updatedAt to now
        // it should move no funds
        // it should emit a {TaskReassigned} event
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(block.timestamp + 1 hours);
        t = _reassign(id, t, executor2, _newDeadline());
        t = _accept(id, t);
        assertEq(t.executor, executor2, "new executor");
    }

    function test_reassignTask_createdPastDeadline() public {
        // it should set executor and deadline, the status to Created and updatedAt to now
        // it should emit a {TaskReassigned} event
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1 days);
        _reassign(id, t, executor2, _newDeadline());
    }

    function test_reassignTask_acceptedPastDeadline() public {
        // it should set executor and deadline, the status to Created and updatedAt to now
        // it should move no funds
        // it should shut out the previous executor (the new one must accept)
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        t = _reassign(id, t, executor2, _newDeadline());

        // The stale executor is out; the new one must accept afresh.
        vm.prank(executor);
        _expectRevertUnauthorized(executor);
        escrow.completeTask(id, t, RESULT);
        t = _complete(id, _accept(id, t));
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        assertEq(usdc.balanceOf(executor2), AMOUNT, "new executor paid");
        assertEq(usdc.balanceOf(executor), 0, "old executor unpaid");
    }

    function test_reassignTask_sameExecutorNewDeadline() public {
        // it should set executor and deadline, the status to Created and updatedAt to now
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        _reassign(id, t, executor, uint40(block.timestamp + HORIZON));
    }

    function testFuzz_reassignTask_newDeadline(uint40 newDeadline) public {
        // it should revert with TaskEscrowInvalidDeadline
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        if (newDeadline <= block.timestamp || newDeadline > block.timestamp + HORIZON) {
            _expectRevertReassign(
                id,
                t,
                executor2,
                newDeadline,
                abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, newDeadline)
            );
        } else {
            _reassign(id, t, executor2, newDeadline);
        }
    }

    function testFuzz_reassignTask_validNewDeadline(uint40 offset) public {
        offset = uint40(bound(offset, 1, HORIZON));
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _reassign(id, t, executor2, uint40(block.timestamp) + offset);
    }

    function testFuzz_reassignTask_acceptedDeadlineBoundary(uint40 lifetime, uint40 lateBy) public {
        // it should revert with TaskEscrowTooEarly(deadline + 1)
        lifetime = uint40(bound(lifetime, 1, HORIZON));
        lateBy = uint40(bound(lateBy, 1, 365 days));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp) + lifetime;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        t = _accept(id, t);

        vm.warp(p.deadline);
        uint40 newDeadline = _newDeadline();
        vm.prank(client);
        _expectRevertTooEarly(uint256(p.deadline) + 1);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);

        vm.warp(uint256(p.deadline) + lateBy);
        _reassign(id, t, executor2, _newDeadline());
    }
}
