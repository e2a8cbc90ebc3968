// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors claimDisputeDefault.tree.
contract ClaimDisputeDefaultTest is EscrowBase {
    function _disputeEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.disputeWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t) + 1);
        _expectRevertUnknown(_unknownId());
        escrow.claimDisputeDefault(_unknownId(), t);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t) + 1);
        _expectRevertStale(id);
        escrow.claimDisputeDefault(id, _stale(t));
    }

    function test_RevertWhen_StatusNotDisputed() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Disputed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.warp(block.timestamp + 60 days);
            _expectRevertStatus(id, all[i]);
            escrow.claimDisputeDefault(id, t);
        }
    }

    function test_RevertWhen_DisputeWindowOpen() public {
        // it should revert with TaskEscrowTooEarly(updatedAt + disputeWindow + 1)
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        _expectRevertTooEarly(_disputeEnd(t) + 1);
        escrow.claimDisputeDefault(id, t);
        vm.warp(_disputeEnd(t));
        _expectRevertTooEarly(_disputeEnd(t) + 1);
        escrow.claimDisputeDefault(id, t);
    }

    function test_claimDisputeDefault() public {
        // it should set the status to Refunded, updatedAt to now and executorShareBps to 0
        // it should refund the whole amount to the funder
        // it should emit a {TaskSettled} event (Refunded, DisputeDefault)
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t) + 1);
        Balances memory before = _balances(t);

        _expectSettled(id, ITaskEscrow.Status.Refunded, ITaskEscrow.Settlement.DisputeDefault, 0, AMOUNT);
        vm.prank(stranger);
        escrow.claimDisputeDefault(id, t);

        _assertStored(id, _settled(t, ITaskEscrow.Status.Refunded, 0));
        _assertPaidOut(t, before, 0, AMOUNT);
    }

    function test_RevertWhen_ArbiterRulesAfterDefault() public {
        // it should shut out a late ruling
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t) + 1);
        escrow.claimDisputeDefault(id, t);
        ITaskEscrow.Task memory refunded = _settled(_copy(t), ITaskEscrow.Status.Refunded, 0);
        vm.prank(arbiter);
        _expectRevertStatus(id, ITaskEscrow.Status.Refunded);
        escrow.resolveDispute(id, refunded, BPS, "late");
    }

    function testFuzz_claimDisputeDefault_disputeWindowBoundary(uint32 disputeWindow_, uint256 lateBy)
        public
    {
        // it should revert with TaskEscrowTooEarly(updatedAt + disputeWindow + 1)
        // it should set the status to Refunded, updatedAt to now and executorShareBps to 0
        disputeWindow_ = uint32(bound(disputeWindow_, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        _setWindows(disputeWindow_, APPEAL_WINDOW);
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        uint256 end = _disputeEnd(t);

        vm.warp(end);
        _expectRevertTooEarly(end + 1);
        escrow.claimDisputeDefault(id, t);

        vm.warp(end + lateBy);
        Balances memory before = _balances(t);
        _expectSettled(id, ITaskEscrow.Status.Refunded, ITaskEscrow.Settlement.DisputeDefault, 0, AMOUNT);
        escrow.claimDisputeDefault(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Refunded, 0));
        _assertPaidOut(t, before, 0, AMOUNT);
    }
}
