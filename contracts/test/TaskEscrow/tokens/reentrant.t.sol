// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {ReentrantToken} from "../../mocks/ReentrantToken.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice An escrow settled in a hostile token that re-enters the escrow in the
/// middle of every payout or pull. The reentrancy guard stops each attempt
/// (ReentrancyGuardReentrantCall) and nobody is paid twice; unguarded calls
/// only ever see the already-settled state (checks-effects-interactions).
contract ReentrantTokenTest is EscrowBase {
    ReentrantToken internal token;

    enum Payout {
        Approve,
        Release,
        Ruling,
        AppealRuling,
        Finalize,
        DisputeDefault,
        RefundExpired,
        Cancel,
        Decline
    }

    function setUp() public override {
        super.setUp();
        token = new ReentrantToken();
        vm.label(address(token), "hostileToken");
        escrow = _deployEscrow(address(token));
        token.mint(funder, 1_000_000_000_000);
        vm.prank(funder);
        token.approve(address(escrow), type(uint256).max);
    }

    function _guardError() private pure returns (bytes memory) {
        return abi.encodeWithSelector(ReentrancyGuardTransient.ReentrancyGuardReentrantCall.selector);
    }

    function _expectGuard() private {
        vm.expectRevert(_guardError());
    }

    /// @dev A completed task whose client is the token itself, so a re-entrant
    /// approvePayment is authorized and only the guard can stop it.
    function _completedWithTokenClient() private returns (uint256 id, ITaskEscrow.Task memory t) {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.client = address(token);
        (id, t) = _create(p);
        t = _complete(id, _accept(id, t));
    }

    function _arm(ReentrantToken.Hook hook, bytes memory payload, bool bubble) private {
        token.arm(hook, address(escrow), payload, bubble);
    }

    function _assertSwallowed(bytes memory err) private view {
        assertEq(token.reentries(), 1, "one re-entry attempted");
        assertFalse(token.lastSuccess(), "re-entry failed");
        assertEq(keccak256(token.lastReturn()), keccak256(err), "re-entry error");
    }

    /*//////////////////////////////////////////////////////////////
                        SAME CALL, SAME TASK
    //////////////////////////////////////////////////////////////*/

    function test_RevertWhen_ApprovePaymentReentersApprovePayment() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _completedWithTokenClient();
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.approvePayment, (id, t, RATING)), true);
        vm.prank(address(token));
        _expectGuard();
        escrow.approvePayment(id, t, RATING);
        _assertStored(id, t);
        assertEq(token.balanceOf(executor), 0, "executor unpaid");
        assertEq(token.balanceOf(address(escrow)), AMOUNT, "escrow still holds");
    }

    function test_approvePayment_reentryBlockedPaysOnce() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _completedWithTokenClient();
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.approvePayment, (id, t, RATING)), false);
        vm.prank(address(token));
        escrow.approvePayment(id, t, RATING);
        _assertSwallowed(_guardError());
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        assertEq(token.balanceOf(executor), AMOUNT, "executor paid once");
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    function test_RevertWhen_ReleasePaymentReentersReleasePayment() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(uint256(t.updatedAt) + t.reviewWindow + 1);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.releasePayment, (id, t)), true);
        vm.prank(stranger);
        _expectGuard();
        escrow.releasePayment(id, t);
        _assertStored(id, t);
        assertEq(token.balanceOf(executor), 0, "executor unpaid");
    }

    function test_releasePayment_reentryBlockedPaysOnce() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        vm.warp(uint256(t.updatedAt) + t.reviewWindow + 1);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.releasePayment, (id, t)), false);
        escrow.releasePayment(id, t);
        _assertSwallowed(_guardError());
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        assertEq(token.balanceOf(executor), AMOUNT, "executor paid once");
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    function test_RevertWhen_RefundExpiredReentersRefundExpired() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        uint256 funderBefore = token.balanceOf(funder);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.refundExpired, (id, t)), true);
        _expectGuard();
        escrow.refundExpired(id, t);
        _assertStored(id, t);
        assertEq(token.balanceOf(funder), funderBefore, "funder not refunded");
    }

    function test_refundExpired_reentryBlockedRefundsOnce() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        vm.warp(uint256(t.deadline) + 1);
        uint256 funderBefore = token.balanceOf(funder);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.refundExpired, (id, t)), false);
        escrow.refundExpired(id, t);
        _assertSwallowed(_guardError());
        _assertStored(id, _settled(t, ITaskEscrow.Status.Expired, 0));
        assertEq(token.balanceOf(funder), funderBefore + AMOUNT, "funder refunded once");
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    /// @dev A task whose executor is the token itself, so a re-entrant
    /// declineTask is authorized and only the guard can stop it.
    function _createdWithTokenExecutor() private returns (uint256 id, ITaskEscrow.Task memory t) {
        _registerExecutor(address(token));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.executor = address(token);
        (id, t) = _create(p);
    }

    function test_RevertWhen_DeclineTaskReentersDeclineTask() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _createdWithTokenExecutor();
        uint256 funderBefore = token.balanceOf(funder);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.declineTask, (id, t, "again")), true);
        vm.prank(address(token));
        _expectGuard();
        escrow.declineTask(id, t, "no");
        _assertStored(id, t);
        assertEq(token.balanceOf(funder), funderBefore, "funder not refunded");
        assertEq(token.balanceOf(address(escrow)), AMOUNT, "escrow still holds");
    }

    function test_declineTask_reentryBlockedRefundsOnce() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        (uint256 id, ITaskEscrow.Task memory t) = _createdWithTokenExecutor();
        uint256 funderBefore = token.balanceOf(funder);
        _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.declineTask, (id, t, "again")), false);
        vm.prank(address(token));
        escrow.declineTask(id, t, "no");
        _assertSwallowed(_guardError());
        _assertStored(id, _settled(t, ITaskEscrow.Status.Declined, 0));
        assertEq(token.balanceOf(funder), funderBefore + AMOUNT, "funder refunded once");
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    /*//////////////////////////////////////////////////////////////
                        RE-ENTRY DURING THE PULL
    //////////////////////////////////////////////////////////////*/

    function _fundToken() private returns (ITaskEscrow.CreateParams memory nested) {
        token.mint(address(token), AMOUNT);
        token.approveFromSelf(address(escrow), AMOUNT);
        nested = _params(_nextRef());
    }

    function test_RevertWhen_CreateTaskReentersCreateTask() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        ITaskEscrow.CreateParams memory nested = _fundToken();
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        uint256 funderBefore = token.balanceOf(funder);
        _arm(ReentrantToken.Hook.TransferFrom, abi.encodeCall(ITaskEscrow.createTask, (nested)), true);
        vm.prank(funder);
        _expectGuard();
        escrow.createTask(p);
        assertEq(escrow.taskHash(escrow.taskIdFor(funder, p.ref)), bytes32(0), "no task");
        assertEq(token.balanceOf(funder), funderBefore, "funder not charged");
    }

    function test_createTask_reentryBlockedCreatesOnce() public {
        // it should revert with ReentrancyGuardReentrantCall (see tokens/reentrant.t.sol)
        ITaskEscrow.CreateParams memory nested = _fundToken();
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        _arm(ReentrantToken.Hook.TransferFrom, abi.encodeCall(ITaskEscrow.createTask, (nested)), false);
        _create(p);
        _assertSwallowed(_guardError());
        assertEq(escrow.taskHash(escrow.taskIdFor(address(token), nested.ref)), bytes32(0), "no nested task");
        assertEq(token.balanceOf(address(escrow)), AMOUNT, "funded once");
        assertEq(token.balanceOf(address(token)), AMOUNT, "token kept its funds");
    }

    function test_RevertWhen_CreateTaskWithPermitReentersCreateTaskWithPermit() public {
        ITaskEscrow.CreateParams memory nested = _fundToken();
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        _arm(
            ReentrantToken.Hook.TransferFrom,
            abi.encodeCall(ITaskEscrow.createTaskWithPermit, (nested, 0, 0, bytes32(0), bytes32(0))),
            true
        );
        // The token has no permit: the try fails and the funder's allowance pays.
        vm.prank(funder);
        _expectGuard();
        escrow.createTaskWithPermit(p, 0, 0, bytes32(0), bytes32(0));
        assertEq(escrow.taskHash(escrow.taskIdFor(funder, p.ref)), bytes32(0), "no task");
    }

    /*//////////////////////////////////////////////////////////////
                    EVERY PAYOUT, EVERY GUARDED ENTRY
    //////////////////////////////////////////////////////////////*/

    /// @dev A task one call away from settling through `path`, the clock set, and that call.
    function _payoutReady(Payout path)
        private
        returns (uint256 id, ITaskEscrow.Task memory t, address caller, bytes memory call)
    {
        caller = client;
        if (path == Payout.Approve) {
            (id, t) = _completed();
            call = abi.encodeCall(ITaskEscrow.approvePayment, (id, t, RATING));
        } else if (path == Payout.Release) {
            (id, t) = _completed();
            vm.warp(uint256(t.updatedAt) + t.reviewWindow + 1);
            call = abi.encodeCall(ITaskEscrow.releasePayment, (id, t));
        } else if (path == Payout.Ruling) {
            _setWindows(DISPUTE_WINDOW, 0);
            (id, t) = _disputed();
            _setWindows(DISPUTE_WINDOW, APPEAL_WINDOW);
            caller = arbiter;
            call = abi.encodeCall(ITaskEscrow.resolveDispute, (id, t, 5000, "r"));
        } else if (path == Payout.AppealRuling) {
            (id, t) = _appealed(5000);
            caller = appealArbiter;
            call = abi.encodeCall(ITaskEscrow.resolveAppeal, (id, t, 5000, "r"));
        } else if (path == Payout.Finalize) {
            (id, t) = _ruled(5000);
            vm.warp(uint256(t.updatedAt) + t.appealWindow + 1);
            call = abi.encodeCall(ITaskEscrow.finalizeRuling, (id, t));
        } else if (path == Payout.DisputeDefault) {
            (id, t) = _disputed();
            vm.warp(uint256(t.updatedAt) + t.disputeWindow + 1);
            call = abi.encodeCall(ITaskEscrow.claimDisputeDefault, (id, t));
        } else if (path == Payout.RefundExpired) {
            (id, t) = _create();
            vm.warp(uint256(t.deadline) + 1);
            call = abi.encodeCall(ITaskEscrow.refundExpired, (id, t));
        } else if (path == Payout.Cancel) {
            (id, t) = _create();
            call = abi.encodeCall(ITaskEscrow.cancelTask, (id, t));
        } else {
            // Created, with a deadline past any review window this test waits out.
            ITaskEscrow.CreateParams memory p = _params(_nextRef());
            p.deadline = uint40(block.timestamp + HORIZON);
            (id, t) = _create(p);
            caller = executor;
            call = abi.encodeCall(ITaskEscrow.declineTask, (id, t, "data:,no"));
        }
    }

    /// @dev Each payout path re-entered to release another task that is due: blocked,
    /// and both tasks can still settle normally afterwards, each paid once.
    function test_RevertWhen_AnyPayoutReentersToReleaseAnotherTask() public {
        for (uint256 i; i <= uint256(Payout.Decline); ++i) {
            (uint256 due, ITaskEscrow.Task memory d) = _completed();
            (uint256 id, ITaskEscrow.Task memory t, address caller, bytes memory call) =
                _payoutReady(Payout(i));
            if (block.timestamp <= uint256(d.updatedAt) + d.reviewWindow) {
                vm.warp(uint256(d.updatedAt) + d.reviewWindow + 1);
            }
            _arm(ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.releasePayment, (due, d)), true);
            vm.prank(caller);
            _expectGuard();
            (bool ok,) = address(escrow).call(call);
            assertTrue(ok, "expected revert was matched");
            _assertStored(id, t);
            _assertStored(due, d);

            // Unarmed, both settle, each exactly once.
            uint256 executorBefore = token.balanceOf(executor);
            _arm(ReentrantToken.Hook.None, "", false);
            escrow.releasePayment(due, d);
            assertEq(token.balanceOf(executor), executorBefore + AMOUNT, "due task paid once");
            vm.prank(caller);
            (ok,) = address(escrow).call(call);
            assertTrue(ok, "payout path settles");
        }
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    /// @dev From inside a payout, every guarded entry point is closed.
    function test_RevertWhen_PayoutReentersAnyGuardedFunction() public {
        ITaskEscrow.Task memory any;
        ITaskEscrow.CreateParams memory p = _params(bytes32("nested"));
        bytes[11] memory entries = [
            abi.encodeCall(ITaskEscrow.createTask, (p)),
            abi.encodeCall(ITaskEscrow.createTaskWithPermit, (p, 0, 0, bytes32(0), bytes32(0))),
            abi.encodeCall(ITaskEscrow.approvePayment, (1, any, RATING)),
            abi.encodeCall(ITaskEscrow.releasePayment, (1, any)),
            abi.encodeCall(ITaskEscrow.resolveDispute, (1, any, 0, "")),
            abi.encodeCall(ITaskEscrow.resolveAppeal, (1, any, 0, "")),
            abi.encodeCall(ITaskEscrow.finalizeRuling, (1, any)),
            abi.encodeCall(ITaskEscrow.claimDisputeDefault, (1, any)),
            abi.encodeCall(ITaskEscrow.refundExpired, (1, any)),
            abi.encodeCall(ITaskEscrow.cancelTask, (1, any)),
            abi.encodeCall(ITaskEscrow.declineTask, (1, any, ""))
        ];
        for (uint256 i; i < entries.length; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = _completed();
            _arm(ReentrantToken.Hook.Transfer, entries[i], false);
            vm.prank(client);
            escrow.approvePayment(id, t, RATING);
            assertEq(token.reentries(), i + 1, "attempted");
            assertFalse(token.lastSuccess(), "blocked");
            assertEq(keccak256(token.lastReturn()), keccak256(_guardError()), "by the guard");
        }
        assertEq(token.balanceOf(executor), entries.length * uint256(AMOUNT), "each task paid once");
        assertEq(token.balanceOf(address(escrow)), 0, "escrow empty");
    }

    /// @dev Unguarded transitions re-entered mid-payout see the settled state:
    /// the effects were stored before the transfer.
    function test_approvePayment_unguardedReentrySeesSettledState() public {
        (uint256 id, ITaskEscrow.Task memory t) = _completedWithTokenClient();
        _arm(
            ReentrantToken.Hook.Transfer, abi.encodeCall(ITaskEscrow.disputeTask, (id, t, "too late")), false
        );
        vm.prank(address(token));
        escrow.approvePayment(id, t, RATING);
        _assertSwallowed(abi.encodeWithSelector(ITaskEscrow.TaskEscrowStaleTask.selector, id));

        ITaskEscrow.Task memory paid = _settled(_copy(t), ITaskEscrow.Status.Paid, BPS);
        _assertStored(id, paid);
        _arm(ReentrantToken.Hook.None, "", false);
        vm.prank(address(token));
        _expectRevertStatus(id, ITaskEscrow.Status.Paid);
        escrow.disputeTask(id, paid, "too late");
        assertEq(token.balanceOf(executor), AMOUNT, "paid once");
    }
}
