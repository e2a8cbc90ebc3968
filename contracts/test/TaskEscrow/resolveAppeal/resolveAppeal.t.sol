// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors resolveAppeal.tree. The split arithmetic over any amount and
/// share is fuzzed in fuzz/splitArithmetic.fuzz.t.sol.
contract ResolveAppealTest is EscrowBase {
    string internal constant RATIONALE = "ipfs://appeal-rationale";

    function _decisionEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.appealRulingWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.prank(appealArbiter);
        _expectRevertUnknown(_unknownId());
        escrow.resolveAppeal(_unknownId(), t, 5000, RATIONALE);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.prank(appealArbiter);
        _expectRevertStale(id);
        escrow.resolveAppeal(id, _stale(t), 5000, RATIONALE);
    }

    function test_RevertWhen_CallerNotAppealArbiter() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        address[7] memory others = [owner, funder, client, executor, executor2, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.resolveAppeal(id, t, 5000, RATIONALE);
        }
    }

    function test_RevertWhen_StatusNotAppealed() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Appealed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(appealArbiter);
            _expectRevertStatus(id, all[i]);
            escrow.resolveAppeal(id, t, 5000, RATIONALE);
        }
    }

    function test_RevertWhen_DecisionWindowPassed() public {
        // it should revert with TaskEscrowTooLate(updatedAt + disputeWindow)
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.warp(_decisionEnd(t) + 1);
        vm.prank(appealArbiter);
        _expectRevertTooLate(_decisionEnd(t));
        escrow.resolveAppeal(id, t, 5000, RATIONALE);
    }

    function test_RevertWhen_ShareAboveWhole() public {
        // it should revert with TaskEscrowInvalidShare
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.prank(appealArbiter);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidShare.selector, BPS + 1));
        escrow.resolveAppeal(id, t, BPS + 1, RATIONALE);
    }

    function test_resolveAppeal_atDecisionWindowEnd() public {
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.warp(_decisionEnd(t));
        _resolveAppeal(id, t, 6000);
    }

    function _appealRuling(uint16 ruled, uint16 bps, ITaskEscrow.Status status, uint128 toExecutor) private {
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(ruled);
        vm.warp(block.timestamp + 1 days);
        Balances memory before = _balances(t);

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.AppealRuled(id, appealArbiter, bps, RATIONALE, uint40(block.timestamp));
        _expectSettled(id, status, ITaskEscrow.Settlement.AppealRuling, toExecutor, AMOUNT - toExecutor);
        vm.prank(appealArbiter);
        escrow.resolveAppeal(id, t, bps, RATIONALE);

        _assertStored(id, _settled(t, status, bps));
        _assertPaidOut(t, before, toExecutor, AMOUNT - toExecutor);
    }

    function test_resolveAppeal_overturnsToExecutor() public {
        // it should emit an {AppealRuled} event
        // it should settle on the appeal share, whatever the first ruling was
        // it should end Paid, Refunded or Split by the shares paid
        // it should emit a {TaskSettled} event (AppealRuling)
        _appealRuling(0, BPS, ITaskEscrow.Status.Paid, AMOUNT);
    }

    function test_resolveAppeal_overturnsToFunder() public {
        // it should emit an {AppealRuled} event
        // it should settle on the appeal share, whatever the first ruling was
        // it should end Paid, Refunded or Split by the shares paid
        // it should emit a {TaskSettled} event (AppealRuling)
        _appealRuling(BPS, 0, ITaskEscrow.Status.Refunded, 0);
    }

    function test_resolveAppeal_split() public {
        // it should emit an {AppealRuled} event
        // it should pay the executor amount * share / 10,000 rounded down and the funder the rest
        // it should end Paid, Refunded or Split by the shares paid
        // it should emit a {TaskSettled} event (AppealRuling)
        _appealRuling(5000, 3333, ITaskEscrow.Status.Split, 3_333_000);
    }

    function test_resolveAppeal_upholds() public {
        // it should emit an {AppealRuled} event
        // it should pay the executor amount * share / 10,000 rounded down and the funder the rest
        // it should emit a {TaskSettled} event (AppealRuling)
        _appealRuling(5000, 5000, ITaskEscrow.Status.Split, AMOUNT / 2);
    }

    function test_resolveAppeal_byNewAppealArbiter() public {
        // it should revert with TaskEscrowUnauthorized
        address next = makeAddr("newAppealArbiter");
        vm.prank(owner);
        escrow.proposeAppealArbiter(next);
        vm.prank(next);
        escrow.acceptAppealArbiter();
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);

        vm.prank(appealArbiter);
        _expectRevertUnauthorized(appealArbiter);
        escrow.resolveAppeal(id, t, 5000, RATIONALE);

        vm.prank(next);
        escrow.resolveAppeal(id, t, 5000, RATIONALE);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Split, 5000));
    }

    function testFuzz_resolveAppeal_decisionWindowBoundary(uint32 appealRulingWindow_, uint256 lateBy)
        public
    {
        // it should revert with TaskEscrowTooLate(updatedAt + disputeWindow)
        appealRulingWindow_ = uint32(bound(appealRulingWindow_, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        vm.prank(owner);
        // The dispute window differs, so a check against it would show.
        escrow.setWindows(DISPUTE_WINDOW, APPEAL_WINDOW, appealRulingWindow_);
        (uint256 onTime, ITaskEscrow.Task memory a) = _appealed(5000);
        (uint256 late, ITaskEscrow.Task memory b) = _appealed(5000);
        uint256 end = _decisionEnd(a);

        vm.warp(end);
        _resolveAppeal(onTime, a, 5000);

        vm.warp(end + lateBy);
        vm.prank(appealArbiter);
        _expectRevertTooLate(end);
        escrow.resolveAppeal(late, b, 5000, RATIONALE);
    }

    function testFuzz_resolveAppeal_invalidShare(uint16 bps) public {
        // it should revert with TaskEscrowInvalidShare
        bps = uint16(bound(bps, BPS + 1, type(uint16).max));
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        vm.prank(appealArbiter);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidShare.selector, bps));
        escrow.resolveAppeal(id, t, bps, RATIONALE);
    }
}
