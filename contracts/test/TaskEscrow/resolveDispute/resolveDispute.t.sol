// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors resolveDispute.tree. The split arithmetic over any amount and
/// share is fuzzed in fuzz/splitArithmetic.fuzz.t.sol.
contract ResolveDisputeTest is EscrowBase {
    string internal constant RATIONALE = "ipfs://rationale";

    function _disputeEnd(ITaskEscrow.Task memory t) private pure returns (uint256) {
        return uint256(t.updatedAt) + t.disputeWindow;
    }

    function test_RevertWhen_TaskUnknown() public {
        // it should revert with TaskEscrowUnknownTask
        (, ITaskEscrow.Task memory t) = _disputed();
        vm.prank(arbiter);
        _expectRevertUnknown(_unknownId());
        escrow.resolveDispute(_unknownId(), t, 5000, RATIONALE);
    }

    function test_RevertWhen_TaskStale() public {
        // it should revert with TaskEscrowStaleTask
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.prank(arbiter);
        _expectRevertStale(id);
        escrow.resolveDispute(id, _stale(t), 5000, RATIONALE);
    }

    function test_RevertWhen_CallerNotArbiter() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        address[7] memory others = [owner, funder, client, executor, executor2, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.resolveDispute(id, t, 5000, RATIONALE);
        }
    }

    function test_RevertWhen_StatusNotDisputed() public {
        // it should revert with TaskEscrowInvalidStatus
        ITaskEscrow.Status[] memory all = _allStatuses();
        for (uint256 i; i < all.length; ++i) {
            if (all[i] == ITaskEscrow.Status.Disputed) continue;
            (uint256 id, ITaskEscrow.Task memory t) = _taskIn(all[i]);
            vm.prank(arbiter);
            _expectRevertStatus(id, all[i]);
            escrow.resolveDispute(id, t, 5000, RATIONALE);
        }
    }

    function test_RevertWhen_DisputeWindowPassed() public {
        // it should revert with TaskEscrowTooLate(updatedAt + disputeWindow)
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t) + 1);
        vm.prank(arbiter);
        _expectRevertTooLate(_disputeEnd(t));
        escrow.resolveDispute(id, t, 5000, RATIONALE);
    }

    function test_RevertWhen_ShareAboveWhole() public {
        // it should revert with TaskEscrowInvalidShare
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.prank(arbiter);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidShare.selector, BPS + 1));
        escrow.resolveDispute(id, t, BPS + 1, RATIONALE);
    }

    function test_resolveDispute_atDisputeWindowEnd() public {
        // it should set the status to Ruled, updatedAt to now and executorShareBps to the share
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(_disputeEnd(t));
        _rule(id, t, 7000);
    }

    function test_resolveDispute_withAppealWindow() public {
        // it should emit a {DisputeRuled} event
        // it should set the status to Ruled, updatedAt to now and executorShareBps to the share
        // it should move no funds
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.warp(block.timestamp + 1 days);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.DisputeRuled(id, arbiter, 7000, RATIONALE, uint40(block.timestamp));
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, 7000, RATIONALE);

        t.status = ITaskEscrow.Status.Ruled;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = 7000;
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore, "nothing paid while appealable");
    }

    /// @dev With an appeal window of zero the ruling settles at once.
    function _finalRuling(uint16 bps, ITaskEscrow.Status status, uint128 toExecutor) private {
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        Balances memory before = _balances(t);

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.DisputeRuled(id, arbiter, bps, RATIONALE, uint40(block.timestamp));
        _expectSettled(id, status, ITaskEscrow.Settlement.Ruling, toExecutor, AMOUNT - toExecutor);
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, bps, RATIONALE);

        _assertStored(id, _settled(t, status, bps));
        _assertPaidOut(t, before, toExecutor, AMOUNT - toExecutor);
    }

    function test_resolveDispute_noAppealWindow_executorWins() public {
        // it should emit a {DisputeRuled} event
        // it should settle at once: executor gets amount * share / 10,000 rounded down, funder the rest
        // it should end Paid (funder gets 0), Refunded (executor gets 0) or Split
        // it should emit a {TaskSettled} event (Ruling)
        _finalRuling(BPS, ITaskEscrow.Status.Paid, AMOUNT);
    }

    function test_resolveDispute_noAppealWindow_funderWins() public {
        // it should emit a {DisputeRuled} event
        // it should settle at once: executor gets amount * share / 10,000 rounded down, funder the rest
        // it should end Paid (funder gets 0), Refunded (executor gets 0) or Split
        // it should emit a {TaskSettled} event (Ruling)
        _finalRuling(0, ITaskEscrow.Status.Refunded, 0);
    }

    function test_resolveDispute_noAppealWindow_split() public {
        // it should emit a {DisputeRuled} event
        // it should settle at once: executor gets amount * share / 10,000 rounded down, funder the rest
        // it should end Paid (funder gets 0), Refunded (executor gets 0) or Split
        // it should emit a {TaskSettled} event (Ruling)
        _finalRuling(2500, ITaskEscrow.Status.Split, AMOUNT / 4);
    }

    function test_resolveDispute_byNewArbiter() public {
        // it should revert with TaskEscrowUnauthorized
        address newArbiter = makeAddr("newArbiter");
        vm.prank(owner);
        escrow.proposeArbiter(newArbiter);
        vm.prank(newArbiter);
        escrow.acceptArbiter();
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();

        vm.prank(arbiter);
        _expectRevertUnauthorized(arbiter);
        escrow.resolveDispute(id, t, 5000, RATIONALE);

        vm.prank(newArbiter);
        escrow.resolveDispute(id, t, 5000, RATIONALE);
        t.status = ITaskEscrow.Status.Ruled;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = 5000;
        _assertStored(id, t);
    }

    function testFuzz_resolveDispute_disputeWindowBoundary(uint32 disputeWindow_, uint256 lateBy) public {
        // it should revert with TaskEscrowTooLate(updatedAt + disputeWindow)
        disputeWindow_ = uint32(bound(disputeWindow_, MIN_WINDOW, MAX_WINDOW));
        lateBy = bound(lateBy, 1, 365 days);
        _setWindows(disputeWindow_, APPEAL_WINDOW);
        (uint256 onTime, ITaskEscrow.Task memory a) = _disputed();
        (uint256 late, ITaskEscrow.Task memory b) = _disputed();
        uint256 end = _disputeEnd(a);
        assertEq(end, _disputeEnd(b), "same window");

        vm.warp(end);
        _rule(onTime, a, 5000);

        vm.warp(end + lateBy);
        vm.prank(arbiter);
        _expectRevertTooLate(end);
        escrow.resolveDispute(late, b, 5000, RATIONALE);
    }

    function testFuzz_resolveDispute_invalidShare(uint16 bps) public {
        // it should revert with TaskEscrowInvalidShare
        bps = uint16(bound(bps, BPS + 1, type(uint16).max));
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.prank(arbiter);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidShare.selector, bps));
        escrow.resolveDispute(id, t, bps, RATIONALE);
    }
}
