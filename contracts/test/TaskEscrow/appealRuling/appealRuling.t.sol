// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors appealRuling.tree.
contract AppealRulingTest is EscrowBase {
    string internal constant REASON = "ipfs://appeal";

    function _appealEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.appealWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.prank(client);
        _expectRevertUnknown(_unknownId());
        escrow.appealRuling(_unknownId(), t, REASON);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.prank(client);
        _expectRevertStale(id);
        escrow.appealRuling(id, _stale(t), REASON);
    }

    function test_RevertWhen_CallerNeitherClientNorExecutor() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        address[6] memory others = [owner, funder, executor2, arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.appealRuling(id, t, REASON);
        }
    }

    function test_RevertWhen_StatusNotRuled() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Ruled) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(client);
            _expectRevertStatus(id, all[i]);
            escrow.appealRuling(id, t, REASON);
        }
    }

    function test_RevertWhen_AppealWindowPassed() public {
        // it should revert with TaskEscrowTooLate(updatedAt + appealWindow)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.warp(_appealEnd(t) + 1);
        vm.prank(executor);
        _expectRevertTooLate(_appealEnd(t));
        escrow.appealRuling(id, t, REASON);
    }

    function test_appealRuling_atAppealWindowEnd() public {
        // it should set the status to Appealed and updatedAt to now (starting the appeal decision window)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.warp(_appealEnd(t));
        _appeal(id, t, executor);
    }

    function test_appealRuling_byClient() public {
        // it should set the status to Appealed and updatedAt to now (starting the appeal decision window)
        // it should keep the pending executorShareBps
        // it should move no funds
        // it should emit a {RulingAppealed} event naming the appellant
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(8000);
        vm.warp(block.timestamp + 1 hours);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.RulingAppealed(id, client, REASON, uint40(block.timestamp));
        vm.prank(client);
        escrow.appealRuling(id, t, REASON);

        t.status = ITaskEscrow.Status.Appealed;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        assertEq(t.executorShareBps, 8000, "pending ruling kept");
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "no funds move");
    }

    function test_appealRuling_byExecutor() public {
        // it should set the status to Appealed and updatedAt to now (starting the appeal decision window)
        // it should emit a {RulingAppealed} event naming the appellant
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(2000);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.RulingAppealed(id, executor, REASON, uint40(block.timestamp));
        vm.prank(executor);
        escrow.appealRuling(id, t, REASON);
        t.status = ITaskEscrow.Status.Appealed;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
    }

    function test_RevertWhen_AppealedTwice() public {
        // it should revert with TaskEscrowInvalidStatus
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        ITaskEscrow.Task memory appealed = _appeal(id, _copy(t), client);
        vm.prank(executor);
        _expectRevertStatus(id, ITaskEscrow.Status.Appealed);
        escrow.appealRuling(id, appealed, REASON);
    }

    function testFuzz_appealRuling_appealWindowBoundary(uint32 appealWindow_, uint256 lateBy) public {
        // it should revert with TaskEscrowTooLate(updatedAt + appealWindow)
        appealWindow_ = uint32(bound(appealWindow_, 1, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        _setWindows(DISPUTE_WINDOW, appealWindow_);
        (uint256 onTime, ITaskEscrow.Task memory a) = _ruled(5000);
        (uint256 late, ITaskEscrow.Task memory b) = _ruled(5000);
        uint256 end = _appealEnd(a);

        vm.warp(end);
        _appeal(onTime, a, client);

        vm.warp(end + lateBy);
        vm.prank(client);
        _expectRevertTooLate(end);
        escrow.appealRuling(late, b, REASON);
    }
}
