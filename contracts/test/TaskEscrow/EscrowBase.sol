// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {Base} from "../Base.t.sol";

/// @notice Helpers shared by the TaskEscrow unit, fuzz and role tests: drive a
/// task into any status, settle it, expect a settlement, read balances.
abstract contract EscrowBase is Base {
    uint16 internal constant BPS = 10_000;
    uint32 internal constant MIN_WINDOW = 1 minutes;
    uint32 internal constant MAX_WINDOW = 30 days;
    uint40 internal constant HORIZON = 365 days;
    string internal constant DECLINE_REASON =
        "data:application/json,{\"reason\":\"cannot read the envelope\"}";

    /*//////////////////////////////////////////////////////////////
                            MORE TASK BUILDERS
    //////////////////////////////////////////////////////////////*/

    function _accepted() internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (id, t) = _create();
        t = _accept(id, t);
    }

    function _ruled(uint16 bps) internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (id, t) = _disputed();
        t = _rule(id, t, bps);
    }

    function _appealed(uint16 bps) internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (id, t) = _ruled(bps);
        t = _appeal(id, t, client);
    }

    /// @dev Settles an appealed task through the appeal arbiter and returns the stored state.
    function _resolveAppeal(uint256 id, ITaskEscrow.Task memory t, uint16 bps)
        internal
        returns (ITaskEscrow.Task memory)
    {
        vm.prank(appealArbiter);
        escrow.resolveAppeal(id, t, bps, "ipfs://appeal-rationale");
        t = _settled(t, _terminal(t.amount, bps), bps);
        _assertStored(id, t);
        return t;
    }

    /// @dev A fresh task in `status`, whatever it takes (terminal ones included).
    function _taskIn(ITaskEscrow.Status status) internal returns (uint256 id, ITaskEscrow.Task memory t) {
        if (status == ITaskEscrow.Status.Created) {
            (id, t) = _create();
        } else if (status == ITaskEscrow.Status.Accepted) {
            (id, t) = _accepted();
        } else if (status == ITaskEscrow.Status.Completed) {
            (id, t) = _completed();
        } else if (status == ITaskEscrow.Status.Disputed) {
            (id, t) = _disputed();
        } else if (status == ITaskEscrow.Status.Ruled) {
            (id, t) = _ruled(5000);
        } else if (status == ITaskEscrow.Status.Appealed) {
            (id, t) = _appealed(5000);
        } else if (status == ITaskEscrow.Status.Paid) {
            (id, t) = _completed();
            vm.prank(client);
            escrow.approvePayment(id, t, RATING);
            t = _settled(t, ITaskEscrow.Status.Paid, BPS);
        } else if (status == ITaskEscrow.Status.Refunded) {
            (id, t) = _appealed(5000);
            t = _resolveAppeal(id, t, 0);
        } else if (status == ITaskEscrow.Status.Split) {
            (id, t) = _appealed(5000);
            t = _resolveAppeal(id, t, 2500);
        } else if (status == ITaskEscrow.Status.Cancelled) {
            (id, t) = _create();
            vm.prank(client);
            escrow.cancelTask(id, t);
            t = _settled(t, ITaskEscrow.Status.Cancelled, 0);
        } else if (status == ITaskEscrow.Status.Expired) {
            (id, t) = _create();
            vm.warp(uint256(t.deadline) + 1);
            escrow.refundExpired(id, t);
            t = _settled(t, ITaskEscrow.Status.Expired, 0);
        } else if (status == ITaskEscrow.Status.Declined) {
            (id, t) = _create();
            vm.prank(t.executor);
            escrow.declineTask(id, t, DECLINE_REASON);
            t = _settled(t, ITaskEscrow.Status.Declined, 0);
        } else {
            revert("no task can be in status None");
        }
        _assertStatus(id, t, status);
    }

    /// @dev Every status a task can be in (None excluded).
    function _allStatuses() internal pure returns (ITaskEscrow.Status[] memory all) {
        all = new ITaskEscrow.Status[](12);
        for (uint256 i; i < 12; ++i) {
            all[i] = ITaskEscrow.Status(i + 1);
        }
    }

    /*//////////////////////////////////////////////////////////////
                            SETTLEMENT MATH
    //////////////////////////////////////////////////////////////*/

    function _toExecutor(uint128 amount, uint16 bps) internal pure returns (uint128) {
        return uint128((uint256(amount) * bps) / BPS);
    }

    /// @dev The terminal status a split settlement of `amount` at `bps` ends in.
    function _terminal(uint128 amount, uint16 bps) internal pure returns (ITaskEscrow.Status) {
        uint128 toExecutor = _toExecutor(amount, bps);
        if (toExecutor == amount) return ITaskEscrow.Status.Paid;
        if (toExecutor == 0) return ITaskEscrow.Status.Refunded;
        return ITaskEscrow.Status.Split;
    }

    /*//////////////////////////////////////////////////////////////
                            EXPECTATIONS
    //////////////////////////////////////////////////////////////*/

    function _expectSettled(
        uint256 id,
        ITaskEscrow.Status status,
        ITaskEscrow.Settlement how,
        uint128 toExecutor,
        uint128 toFunder
    ) internal {
        vm.expectEmit(address(escrow));
        // An approval carries the client's rating; no other settlement does.
        uint8 rating = how == ITaskEscrow.Settlement.Approved ? RATING : 0;
        emit ITaskEscrow.TaskSettled(id, status, how, toExecutor, toFunder, rating, uint40(block.timestamp));
    }

    function _expectRevertUnknown(uint256 id) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnknownTask.selector, id));
    }

    function _expectRevertStale(uint256 id) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowStaleTask.selector, id));
    }

    function _expectRevertStatus(uint256 id, ITaskEscrow.Status status) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, status));
    }

    function _expectRevertUnauthorized(address caller) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnauthorized.selector, caller));
    }

    function _expectNotPending(address caller) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotPending.selector, caller));
    }

    function _pause() internal {
        vm.prank(owner);
        escrow.pause();
    }

    function _expectRevertTooEarly(uint256 notBefore) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTooEarly.selector, notBefore));
    }

    function _expectRevertTooLate(uint256 notAfter) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTooLate.selector, notAfter));
    }

    /*//////////////////////////////////////////////////////////////
                                MISC
    //////////////////////////////////////////////////////////////*/

    /// @dev A copy of `t` whose hash differs from the stored one.
    function _stale(ITaskEscrow.Task memory t) internal pure returns (ITaskEscrow.Task memory s) {
        s = _copy(t);
        s.amount = t.amount + 1;
    }

    function _copy(ITaskEscrow.Task memory t) internal pure returns (ITaskEscrow.Task memory) {
        return abi.decode(abi.encode(t), (ITaskEscrow.Task));
    }

    function _unknownId() internal pure returns (uint256) {
        return uint256(keccak256("no such task"));
    }

    function _mint(address to, uint256 amount) internal {
        vm.prank(owner);
        usdc.mint(to, amount);
    }

    function _setWindows(uint32 disputeWindow_, uint32 appealWindow_) internal {
        vm.prank(owner);
        escrow.setWindows(disputeWindow_, appealWindow_, APPEAL_RULING_WINDOW);
    }

    struct Balances {
        uint256 funder;
        uint256 executor;
        uint256 escrow;
    }

    function _balances(ITaskEscrow.Task memory t) internal view returns (Balances memory b) {
        b.funder = usdc.balanceOf(t.funder);
        b.executor = usdc.balanceOf(t.executor);
        b.escrow = usdc.balanceOf(address(escrow));
    }

    /// @dev Checks the payout since `before`, to the unit.
    function _assertPaidOut(
        ITaskEscrow.Task memory t,
        Balances memory before,
        uint256 toExecutor,
        uint256 toFunder
    ) internal view {
        Balances memory nowB = _balances(t);
        assertEq(nowB.executor, before.executor + toExecutor, "executor balance");
        assertEq(nowB.funder, before.funder + toFunder, "funder balance");
        assertEq(nowB.escrow, before.escrow - toExecutor - toFunder, "escrow balance");
        assertEq(toExecutor + toFunder, t.amount, "payout sums to the amount");
    }
}
