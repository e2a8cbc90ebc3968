// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors disputeTask.tree.
contract DisputeTaskTest is EscrowBase {
    string internal constant REASON = "ipfs://reason";

    function _reviewEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.reviewWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _completed();
        vm.prank(client);
        _expectRevertUnknown(_unknownId());
        escrow.disputeTask(_unknownId(), t, REASON);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.prank(client);
        _expectRevertStale(id);
        escrow.disputeTask(id, _stale(t), REASON);
    }

    function test_RevertWhen_CallerNotClient() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        address[5] memory others = [funder, executor, executor2, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.disputeTask(id, t, REASON);
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
            escrow.disputeTask(id, t, REASON);
        }
    }

    function test_RevertWhen_ReviewWindowPassed() public {
        // it should revert with TaskEscrowTooLate(updatedAt + reviewWindow)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t) + 1);
        vm.prank(client);
        _expectRevertTooLate(_reviewEnd(t));
        escrow.disputeTask(id, t, REASON);
    }

    function test_disputeTask_atReviewWindowEnd() public {
        // it should set the status to Disputed and updatedAt to now (starting the dispute window)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(_reviewEnd(t));
        t = _dispute(id, t);
        assertEq(uint256(t.updatedAt), block.timestamp, "dispute window starts now");
    }

    function test_disputeTask() public {
        // it should set the status to Disputed and updatedAt to now (starting the dispute window)
        // it should move no funds
        // it should emit a {TaskDisputed} event carrying the reason URI
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(block.timestamp + 1 hours);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskDisputed(id, client, REASON, uint40(block.timestamp));
        vm.prank(client);
        escrow.disputeTask(id, t, REASON);

        t.status = ITaskEscrow.Status.Disputed;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "no funds move");
    }

    function testFuzz_disputeTask_reviewWindowBoundary(uint32 reviewWindow, uint256 lateBy) public {
        // it should revert with TaskEscrowTooLate(updatedAt + reviewWindow)
        reviewWindow = uint32(bound(reviewWindow, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = reviewWindow;
        (uint256 onTime, ITaskEscrow.Task memory a) = _create(p);
        p.ref = _nextRef();
        (uint256 late, ITaskEscrow.Task memory b) = _create(p);
        a = _complete(onTime, _accept(onTime, a));
        b = _complete(late, _accept(late, b));
        uint256 end = _reviewEnd(a);

        vm.warp(end);
        _dispute(onTime, a);

        vm.warp(end + lateBy);
        vm.prank(client);
        _expectRevertTooLate(end);
        escrow.disputeTask(late, b, REASON);
    }
}
