// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Every function that takes a {Task} rejects a copy with any one field
/// changed (TaskEscrowStaleTask), even from the right caller at the right time
/// in the right status, and then accepts the genuine copy.
contract StaleTaskTest is EscrowBase {
    enum Fn {
        Accept,
        Complete,
        Approve,
        Release,
        Dispute,
        ResolveDispute,
        Appeal,
        ResolveAppeal,
        Finalize,
        ClaimDefault,
        RefundExpired,
        Cancel,
        Reassign,
        Decline
    }

    /// @dev A task in the status `fn` needs, the clock where `fn` is allowed, and who may call.
    function _ready(Fn fn) private returns (uint256 id, ITaskEscrow.Task memory t, address caller) {
        caller = client;
        if (fn == Fn.Accept || fn == Fn.Cancel || fn == Fn.Reassign || fn == Fn.Decline) {
            (id, t) = _create();
            if (fn == Fn.Accept || fn == Fn.Decline) caller = executor;
        } else if (fn == Fn.RefundExpired) {
            (id, t) = _create();
            vm.warp(uint256(t.deadline) + 1);
        } else if (fn == Fn.Complete) {
            (id, t) = _accepted();
            caller = executor;
        } else if (fn == Fn.Approve || fn == Fn.Dispute) {
            (id, t) = _completed();
        } else if (fn == Fn.Release) {
            (id, t) = _completed();
            vm.warp(uint256(t.updatedAt) + t.reviewWindow + 1);
        } else if (fn == Fn.ResolveDispute) {
            (id, t) = _disputed();
            caller = arbiter;
        } else if (fn == Fn.ClaimDefault) {
            (id, t) = _disputed();
            vm.warp(uint256(t.updatedAt) + t.disputeWindow + 1);
        } else if (fn == Fn.Appeal) {
            (id, t) = _ruled(5000);
        } else if (fn == Fn.Finalize) {
            (id, t) = _ruled(5000);
            vm.warp(uint256(t.updatedAt) + t.appealWindow + 1);
        } else {
            (id, t) = _appealed(5000);
            caller = appealArbiter;
        }
    }

    function _invoke(Fn fn, uint256 id, ITaskEscrow.Task memory t) private {
        if (fn == Fn.Accept) escrow.acceptTask(id, t);
        else if (fn == Fn.Complete) escrow.completeTask(id, t, RESULT);
        else if (fn == Fn.Approve) escrow.approvePayment(id, t, RATING);
        else if (fn == Fn.Release) escrow.releasePayment(id, t);
        else if (fn == Fn.Dispute) escrow.disputeTask(id, t, "reason");
        else if (fn == Fn.ResolveDispute) escrow.resolveDispute(id, t, 5000, "rationale");
        else if (fn == Fn.Appeal) escrow.appealRuling(id, t, "appeal");
        else if (fn == Fn.ResolveAppeal) escrow.resolveAppeal(id, t, 5000, "rationale");
        else if (fn == Fn.Finalize) escrow.finalizeRuling(id, t);
        else if (fn == Fn.ClaimDefault) escrow.claimDisputeDefault(id, t);
        else if (fn == Fn.RefundExpired) escrow.refundExpired(id, t);
        else if (fn == Fn.Cancel) escrow.cancelTask(id, t);
        else if (fn == Fn.Decline) escrow.declineTask(id, t, DECLINE_REASON);
        else escrow.reassignTask(id, t, executor2, uint40(block.timestamp + 1 days), CAPABILITY);
    }

    function _nonZero(uint256 salt, uint256 max) private pure returns (uint256) {
        return bound(salt, 1, max);
    }

    /// @dev `t` with field number `field` (0..12, declaration order) changed.
    function _mutate(ITaskEscrow.Task memory t, uint8 field, uint256 salt)
        private
        pure
        returns (ITaskEscrow.Task memory m)
    {
        m = _copy(t);
        field = uint8(bound(field, 0, 12));
        if (field == 0) {
            m.funder = address(uint160(t.funder) ^ uint160(_nonZero(salt, type(uint160).max)));
        } else if (field == 1) {
            m.client = address(uint160(t.client) ^ uint160(_nonZero(salt, type(uint160).max)));
        } else if (field == 2) {
            m.executor = address(uint160(t.executor) ^ uint160(_nonZero(salt, type(uint160).max)));
        } else if (field == 3) {
            m.amount = t.amount ^ uint128(_nonZero(salt, type(uint128).max));
        } else if (field == 4) {
            m.deadline = t.deadline ^ uint40(_nonZero(salt, type(uint40).max));
        } else if (field == 5) {
            m.updatedAt = t.updatedAt ^ uint40(_nonZero(salt, type(uint40).max));
        } else if (field == 6) {
            m.reviewWindow = t.reviewWindow ^ uint32(_nonZero(salt, type(uint32).max));
        } else if (field == 7) {
            m.disputeWindow = t.disputeWindow ^ uint32(_nonZero(salt, type(uint32).max));
        } else if (field == 8) {
            m.appealWindow = t.appealWindow ^ uint32(_nonZero(salt, type(uint32).max));
        } else if (field == 9) {
            m.executorShareBps = t.executorShareBps ^ uint16(_nonZero(salt, type(uint16).max));
        } else if (field == 10) {
            m.status = ITaskEscrow.Status((uint256(t.status) + 1 + (salt % 12)) % 13);
        } else if (field == 11) {
            m.specHash = t.specHash ^ bytes32(salt == 0 ? 1 : salt);
        } else {
            m.resultHash = t.resultHash ^ bytes32(salt == 0 ? 1 : salt);
        }
    }

    function _check(Fn fn, uint8 field, uint256 salt) private {
        (uint256 id, ITaskEscrow.Task memory t, address caller) = _ready(fn);
        ITaskEscrow.Task memory forged = _mutate(t, field, salt);
        assertTrue(keccak256(abi.encode(forged)) != keccak256(abi.encode(t)), "mutation changed the task");

        vm.prank(caller);
        _expectRevertStale(id);
        _invoke(fn, id, forged);
        _assertStored(id, t);

        // The genuine state still goes through.
        vm.prank(caller);
        _invoke(fn, id, t);
        assertTrue(escrow.taskHash(id) != keccak256(abi.encode(t)), "state moved on");
    }

    function testFuzz_acceptTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Accept, field, salt);
    }

    function testFuzz_completeTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Complete, field, salt);
    }

    function testFuzz_approvePayment_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Approve, field, salt);
    }

    function testFuzz_releasePayment_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Release, field, salt);
    }

    function testFuzz_disputeTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Dispute, field, salt);
    }

    function testFuzz_resolveDispute_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.ResolveDispute, field, salt);
    }

    function testFuzz_appealRuling_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Appeal, field, salt);
    }

    function testFuzz_resolveAppeal_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.ResolveAppeal, field, salt);
    }

    function testFuzz_finalizeRuling_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Finalize, field, salt);
    }

    function testFuzz_claimDisputeDefault_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.ClaimDefault, field, salt);
    }

    function testFuzz_refundExpired_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.RefundExpired, field, salt);
    }

    function testFuzz_cancelTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Cancel, field, salt);
    }

    function testFuzz_reassignTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Reassign, field, salt);
    }

    function testFuzz_declineTask_rejectsMutatedTask(uint8 field, uint256 salt) public {
        _check(Fn.Decline, field, salt);
    }

    /// @dev Every field, one by one, for every function: the exhaustive companion to the fuzz.
    function test_allTaskFunctions_rejectEveryMutatedField() public {
        for (uint256 fn; fn <= uint256(Fn.Decline); ++fn) {
            for (uint8 field; field <= 12; ++field) {
                _check(Fn(fn), field, uint256(keccak256(abi.encode(fn, field))));
            }
        }
    }

    /// @dev The id is not part of the hash: a different task is stale under this id,
    /// while an identical one (same funder, parties, terms, time) is the same state.
    function test_acceptTask_taskOfAnotherId() public {
        (uint256 a, ITaskEscrow.Task memory ta) = _create();
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = AMOUNT + 1;
        (uint256 b,) = _create(p);
        vm.prank(executor);
        _expectRevertStale(b);
        escrow.acceptTask(b, ta);
        _accept(a, _copy(ta));
        // Same funder, parties, terms and time under another reference: the same state.
        (uint256 c, ITaskEscrow.Task memory tc) = _create();
        assertEq(keccak256(abi.encode(tc)), keccak256(abi.encode(ta)), "identical state");
        _accept(c, ta);
    }
}
