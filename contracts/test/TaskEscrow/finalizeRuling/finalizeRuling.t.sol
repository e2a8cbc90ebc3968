// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors finalizeRuling.tree.
contract FinalizeRulingTest is EscrowBase {
    function _appealEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.appealWindow;
    }

    function _decisionEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.appealRulingWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.warp(_appealEnd(t) + 1);
        _expectRevertUnknown(_unknownId());
        escrow.finalizeRuling(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        vm.warp(_appealEnd(t) + 1);
        _expectRevertStale(id);
        escrow.finalizeRuling(id, _stale(t));
    }

    function test_RevertWhen_StatusNeitherRuledNorAppealed() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Ruled || all[i] == ITaskEscrow.Status.Appealed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.warp(block.timestamp + 60 days);
            _expectRevertStatus(id, all[i]);
            escrow.finalizeRuling(id, t);
        }
    }

    function test_RevertWhen_RuledAndAppealWindowOpen() public {
        // it should revert with TaskEscrowTooEarly(updatedAt + appealWindow + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        _expectRevertTooEarly(_appealEnd(t) + 1);
        escrow.finalizeRuling(id, t);
        vm.warp(_appealEnd(t));
        _expectRevertTooEarly(_appealEnd(t) + 1);
        escrow.finalizeRuling(id, t);
    }

    function test_RevertWhen_AppealedAndDecisionWindowOpen() public {
        // it should revert with TaskEscrowTooEarly(updatedAt + disputeWindow + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        _expectRevertTooEarly(_decisionEnd(t) + 1);
        escrow.finalizeRuling(id, t);
        vm.warp(_decisionEnd(t));
        _expectRevertTooEarly(_decisionEnd(t) + 1);
        escrow.finalizeRuling(id, t);
    }

    function _finalize(uint256 id, ITaskEscrow.Task memory t, ITaskEscrow.Status status, uint128 toExecutor)
        private
    {
        Balances memory before = _balances(t);
        _expectSettled(id, status, ITaskEscrow.Settlement.RulingFinalized, toExecutor, AMOUNT - toExecutor);
        vm.prank(stranger);
        escrow.finalizeRuling(id, t);
        _assertStored(id, _settled(t, status, t.executorShareBps));
        _assertPaidOut(t, before, toExecutor, AMOUNT - toExecutor);
    }

    function test_finalizeRuling_unappealedSplit() public {
        // it should settle on the stored executorShareBps (Paid, Refunded or Split)
        // it should emit a {TaskSettled} event (RulingFinalized)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(6000);
        vm.warp(_appealEnd(t) + 1);
        _finalize(id, t, ITaskEscrow.Status.Split, 6_000_000);
    }

    function test_finalizeRuling_unappealedToExecutor() public {
        // it should settle on the stored executorShareBps (Paid, Refunded or Split)
        // it should emit a {TaskSettled} event (RulingFinalized)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(BPS);
        vm.warp(_appealEnd(t) + 1);
        _finalize(id, t, ITaskEscrow.Status.Paid, AMOUNT);
    }

    function test_finalizeRuling_unappealedToFunder() public {
        // it should settle on the stored executorShareBps (Paid, Refunded or Split)
        // it should emit a {TaskSettled} event (RulingFinalized)
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(0);
        vm.warp(_appealEnd(t) + 1);
        _finalize(id, t, ITaskEscrow.Status.Refunded, 0);
    }

    function test_finalizeRuling_appealUndecided() public {
        // it should settle on the first ruling's executorShareBps
        // it should emit a {TaskSettled} event (RulingFinalized)
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(1500);
        vm.warp(_decisionEnd(t) + 1);
        _finalize(id, t, ITaskEscrow.Status.Split, 1_500_000);
    }

    function testFuzz_finalizeRuling_appealWindowBoundary(uint32 appealWindow_, uint256 lateBy) public {
        // it should revert with TaskEscrowTooEarly(updatedAt + appealWindow + 1)
        appealWindow_ = uint32(bound(appealWindow_, 1, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        _setWindows(DISPUTE_WINDOW, appealWindow_);
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        uint256 end = _appealEnd(t);
        vm.warp(end);
        _expectRevertTooEarly(end + 1);
        escrow.finalizeRuling(id, t);
        vm.warp(end + lateBy);
        _finalize(id, t, ITaskEscrow.Status.Split, AMOUNT / 2);
    }

    function testFuzz_finalizeRuling_decisionWindowBoundary(uint32 appealRulingWindow_, uint256 lateBy)
        public
    {
        // it should revert with TaskEscrowTooEarly(updatedAt + disputeWindow + 1)
        appealRulingWindow_ = uint32(bound(appealRulingWindow_, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        vm.prank(owner);
        // The dispute window differs, so a check against it would show.
        escrow.setWindows(DISPUTE_WINDOW, APPEAL_WINDOW, appealRulingWindow_);
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        uint256 end = _decisionEnd(t);
        vm.warp(end);
        _expectRevertTooEarly(end + 1);
        escrow.finalizeRuling(id, t);
        vm.warp(end + lateBy);
        _finalize(id, t, ITaskEscrow.Status.Split, AMOUNT / 2);
    }
}
