// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {TaskEscrow} from "../../../src/TaskEscrow.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {EscrowStore} from "../stores/EscrowStore.sol";
import {EscrowBaseHandler} from "./EscrowBaseHandler.sol";

/// @notice Drives tasks through their lifecycle: each handler picks a task in
/// a status and time where the call must succeed, calls it as the right actor
/// and updates the ghost task. The `attempt*` handlers make calls that must be
/// rejected (wrong status, outside a window, forged task) and record whether
/// they were, with exactly the expected error. `warp*` move the clock forward.
contract EscrowLifecycleHandler is EscrowBaseHandler {
    uint256 internal constant MAX_DEADLINE = 7 days;
    uint256 internal constant MAX_WARP = 1 days;
    /// @dev The rating clients give in an approval.
    uint8 internal constant RATING = 100;

    address internal immutable _stranger;

    constructor(TaskEscrow escrow_, MockUSDC usdc_, EscrowStore store_, address owner_)
        EscrowBaseHandler(escrow_, usdc_, store_, owner_)
    {
        _stranger = _named("inv-stranger");
    }

    /*//////////////////////////////////////////////////////////////
                                TIME
    //////////////////////////////////////////////////////////////*/

    function warp(uint256 seed) external instrument("warp") {
        _setTime(store.time() + bound(seed, 0, MAX_WARP));
    }

    /// @notice Warps to the exact second a window of some open task ends, or
    /// one second after, then checks that task's out-of-window call is
    /// rejected right at the boundary.
    function warpToBoundary(uint256 taskSeed, bool after_) external instrument("warpToBoundary") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _isOpen);
        if (!found) return;
        uint256 target = _windowEnd(t) + (after_ ? 1 : 0);
        if (target < store.time()) return;
        _setTime(target);
        _attemptOutOfWindow(id, t, after_);
    }

    function _setTime(uint256 t) internal {
        store.setTime(t);
        vm.warp(t);
    }

    /// @dev The end of the window the task's status is waiting on.
    function _windowEnd(ITaskEscrow.Task memory t) internal pure returns (uint256) {
        ITaskEscrow.Status s = t.status;
        if (s == ITaskEscrow.Status.Created || s == ITaskEscrow.Status.Accepted) return t.deadline;
        if (s == ITaskEscrow.Status.Completed) return uint256(t.updatedAt) + t.reviewWindow;
        if (s == ITaskEscrow.Status.Ruled) return uint256(t.updatedAt) + t.appealWindow;
        if (s == ITaskEscrow.Status.Appealed) return uint256(t.updatedAt) + t.appealRulingWindow;
        return uint256(t.updatedAt) + t.disputeWindow; // Disputed
    }

    /*//////////////////////////////////////////////////////////////
                        PRECONDITIONS (the model)
    //////////////////////////////////////////////////////////////*/

    function _any(ITaskEscrow.Task memory) internal pure returns (bool) {
        return true;
    }

    function _isOpen(ITaskEscrow.Task memory t) internal pure returns (bool) {
        return !_isTerminal(t.status);
    }

    function _before(ITaskEscrow.Task memory t) internal view returns (bool) {
        return block.timestamp <= _windowEnd(t);
    }

    function _canAccept(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Created && _before(t);
    }

    function _canComplete(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Accepted && _before(t);
    }

    function _isCompleted(ITaskEscrow.Task memory t) internal pure returns (bool) {
        return t.status == ITaskEscrow.Status.Completed;
    }

    function _canRelease(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Completed && !_before(t);
    }

    function _canDispute(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Completed && _before(t);
    }

    function _canResolveDispute(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Disputed && _before(t);
    }

    function _canAppeal(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Ruled && _before(t);
    }

    function _canResolveAppeal(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Appealed && _before(t);
    }

    function _canFinalize(ITaskEscrow.Task memory t) internal view returns (bool) {
        return
            (t.status == ITaskEscrow.Status.Ruled || t.status == ITaskEscrow.Status.Appealed) && !_before(t);
    }

    function _canClaimDefault(ITaskEscrow.Task memory t) internal view returns (bool) {
        return t.status == ITaskEscrow.Status.Disputed && !_before(t);
    }

    function _canRefundExpired(ITaskEscrow.Task memory t) internal view returns (bool) {
        return
            (t.status == ITaskEscrow.Status.Created || t.status == ITaskEscrow.Status.Accepted) && !_before(t);
    }

    function _canDecline(ITaskEscrow.Task memory t) internal view returns (bool) {
        return
            (t.status == ITaskEscrow.Status.Created || t.status == ITaskEscrow.Status.Accepted) && _before(t);
    }

    function _isCreated(ITaskEscrow.Task memory t) internal pure returns (bool) {
        return t.status == ITaskEscrow.Status.Created;
    }

    function _canReassign(ITaskEscrow.Task memory t) internal view returns (bool) {
        return
            t.status == ITaskEscrow.Status.Created || (t.status == ITaskEscrow.Status.Accepted && !_before(t));
    }

    /*//////////////////////////////////////////////////////////////
                                LIFECYCLE
    //////////////////////////////////////////////////////////////*/

    function acceptTask(uint256 taskSeed) external instrument("acceptTask") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canAccept);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.executor);
        escrow.acceptTask(id, t);
        t.status = ITaskEscrow.Status.Accepted;
        t.updatedAt = uint40(block.timestamp);
        _commit(id, from, t);
    }

    function completeTask(uint256 taskSeed, bool otherResult) external instrument("completeTask") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canComplete);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        string memory resultURI = otherResult ? "ipfs://result-b" : "data:text/plain,three bullet points";
        _observeStart();
        vm.prank(t.executor);
        escrow.completeTask(id, t, resultURI);
        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(resultURI));
        _commit(id, from, t);
    }

    function approvePayment(uint256 taskSeed) external instrument("approvePayment") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _isCompleted);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.client);
        escrow.approvePayment(id, t, RATING);
        _commit(id, from, _settled(t, BPS, ITaskEscrow.Settlement.Approved));
    }

    /// @dev `n` ratings of {RATING}.
    function _ratings(uint256 n) internal pure returns (uint8[] memory rs) {
        rs = new uint8[](n);
        for (uint256 i; i < n; ++i) {
            rs[i] = RATING;
        }
    }

    /// @notice The executor's fast path: accept and complete in one call.
    function deliver(uint256 taskSeed) external instrument("deliver") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canAccept);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.executor);
        escrow.deliver(id, t, "data:text/plain,delivered at once");
        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes("data:text/plain,delivered at once"));
        _commit(id, from, t);
    }

    /// @notice A client approves up to four of its completed tasks in one call;
    /// each transfer is attributed to the settled items of its executor it pays.
    function approvePayments(uint256 taskSeed) external instrument("approvePayments") {
        (bool found, uint256 first, ITaskEscrow.Task memory t0) = _pick(taskSeed, _isCompleted);
        if (!found) return;
        uint256[] memory ids = new uint256[](4);
        ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](4);
        (ids[0], ts[0]) = (first, t0);
        uint256 k = 1;
        uint256 n = store.taskCount();
        for (uint256 i; i < n && k < 4; ++i) {
            uint256 id = store.taskIdAt(i);
            ITaskEscrow.Task memory t = store.task(id);
            if (id != first && t.status == ITaskEscrow.Status.Completed && t.client == t0.client) {
                (ids[k], ts[k]) = (id, t);
                ++k;
            }
        }
        assembly ("memory-safe") {
            mstore(ids, k)
            mstore(ts, k)
        }
        vm.recordLogs();
        vm.prank(t0.client);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
        _attributeBatchPayouts(vm.getRecordedLogs(), ids, ts);
        for (uint256 i; i < k; ++i) {
            store.setTask(ids[i], _settled(ts[i], BPS, ITaskEscrow.Settlement.Approved));
            store.recordTransition(uint8(ITaskEscrow.Status.Completed), uint8(ITaskEscrow.Status.Paid));
        }
    }

    /// @dev Attributes the payouts of one {approvePayments} call: a transfer to an
    /// executor pays, in order, the settled items of that executor not yet paid
    /// (one transfer may carry a run of them); whatever it carries beyond them is
    /// recorded against the last settled item, where the ghost's sums catch it.
    function _attributeBatchPayouts(Vm.Log[] memory logs, uint256[] memory ids, ITaskEscrow.Task[] memory ts)
        private
    {
        uint128[] memory owed = new uint128[](ids.length);
        bool[] memory settled = new bool[](ids.length);
        uint256 current;
        for (uint256 i; i < logs.length; ++i) {
            Vm.Log memory l = logs[i];
            if (l.emitter == address(escrow) && l.topics[0] == ITaskEscrow.TaskSettled.selector) {
                current = uint256(l.topics[1]);
                (uint128 toExecutor, uint128 toFunder,) = abi.decode(l.data, (uint128, uint128, uint40));
                store.recordSettlement(current, uint8(uint256(l.topics[2])), toExecutor, toFunder);
                for (uint256 j; j < ids.length; ++j) {
                    if (ids[j] == current && !settled[j]) {
                        settled[j] = true;
                        owed[j] = toExecutor;
                        break;
                    }
                }
            } else if (l.emitter == address(usdc) && l.topics[0] == IERC20.Transfer.selector) {
                if (address(uint160(uint256(l.topics[1]))) != address(escrow)) continue;
                address to = address(uint160(uint256(l.topics[2])));
                uint128 left = uint128(abi.decode(l.data, (uint256)));
                for (uint256 j; j < ids.length && left != 0; ++j) {
                    if (!settled[j] || owed[j] == 0 || ts[j].executor != to) continue;
                    uint128 part = owed[j] < left ? owed[j] : left;
                    store.recordOutflow(ids[j], to, part);
                    owed[j] -= part;
                    left -= part;
                }
                if (left != 0) store.recordOutflow(current, to, left);
            }
        }
    }

    function releasePayment(uint256 taskSeed, uint256 callerSeed) external instrument("releasePayment") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canRelease);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(_anyone(callerSeed, t));
        escrow.releasePayment(id, t);
        _commit(id, from, _settled(t, BPS, ITaskEscrow.Settlement.AutoReleased));
    }

    function disputeTask(uint256 taskSeed) external instrument("disputeTask") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canDispute);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.client);
        escrow.disputeTask(id, t, "ipfs://reason");
        t.status = ITaskEscrow.Status.Disputed;
        t.updatedAt = uint40(block.timestamp);
        _commit(id, from, t);
    }

    function resolveDispute(uint256 taskSeed, uint256 bpsSeed) external instrument("resolveDispute") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canResolveDispute);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        uint16 bps = _share(bpsSeed);
        _observeStart();
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, bps, "ipfs://rationale");
        if (t.appealWindow == 0) {
            t = _settled(t, bps, ITaskEscrow.Settlement.Ruling);
        } else {
            t.status = ITaskEscrow.Status.Ruled;
            t.updatedAt = uint40(block.timestamp);
            t.executorShareBps = bps;
        }
        _commit(id, from, t);
    }

    function appealRuling(uint256 taskSeed, bool byExecutor) external instrument("appealRuling") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canAppeal);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(byExecutor ? t.executor : t.client);
        escrow.appealRuling(id, t, "ipfs://appeal");
        t.status = ITaskEscrow.Status.Appealed;
        t.updatedAt = uint40(block.timestamp);
        _commit(id, from, t);
    }

    function resolveAppeal(uint256 taskSeed, uint256 bpsSeed) external instrument("resolveAppeal") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canResolveAppeal);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        uint16 bps = _share(bpsSeed);
        _observeStart();
        vm.prank(appealArbiter);
        escrow.resolveAppeal(id, t, bps, "ipfs://appeal-rationale");
        _commit(id, from, _settled(t, bps, ITaskEscrow.Settlement.AppealRuling));
    }

    function finalizeRuling(uint256 taskSeed, uint256 callerSeed) external instrument("finalizeRuling") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canFinalize);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(_anyone(callerSeed, t));
        escrow.finalizeRuling(id, t);
        _commit(id, from, _settled(t, t.executorShareBps, ITaskEscrow.Settlement.RulingFinalized));
    }

    function claimDisputeDefault(uint256 taskSeed, uint256 callerSeed)
        external
        instrument("claimDisputeDefault")
    {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canClaimDefault);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(_anyone(callerSeed, t));
        escrow.claimDisputeDefault(id, t);
        _commit(id, from, _settled(t, 0, ITaskEscrow.Settlement.DisputeDefault));
    }

    function refundExpired(uint256 taskSeed, uint256 callerSeed) external instrument("refundExpired") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canRefundExpired);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(_anyone(callerSeed, t));
        escrow.refundExpired(id, t);
        _commit(id, from, _settled(t, 0, ITaskEscrow.Settlement.Expired));
    }

    function cancelTask(uint256 taskSeed) external instrument("cancelTask") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _isCreated);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.client);
        escrow.cancelTask(id, t);
        _commit(id, from, _settled(t, 0, ITaskEscrow.Settlement.Cancelled));
    }

    /// @notice The executor says no: to a Created task at any time, to an
    /// Accepted one up to its deadline; the funder is refunded in full.
    function declineTask(uint256 taskSeed, bool emptyReason) external instrument("declineTask") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canDecline);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        _observeStart();
        vm.prank(t.executor);
        escrow.declineTask(id, t, emptyReason ? "" : "data:application/json,{\"reason\":\"no\"}");
        _commit(id, from, _settled(t, 0, ITaskEscrow.Settlement.Declined));
    }

    function reassignTask(uint256 taskSeed, uint256 executorSeed, uint256 deadlineSeed)
        external
        instrument("reassignTask")
    {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _canReassign);
        if (!found) return;
        ITaskEscrow.Status from = t.status;
        address newExecutor = _pickExecutor(executorSeed, t.funder, t.client);
        uint40 newDeadline = uint40(block.timestamp + bound(deadlineSeed, 1, MAX_DEADLINE));
        _observeStart();
        vm.prank(t.client);
        escrow.reassignTask(id, t, newExecutor, newDeadline, CAPABILITY);
        t.executor = newExecutor;
        t.deadline = newDeadline;
        t.status = ITaskEscrow.Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _commit(id, from, t);
    }

    /*//////////////////////////////////////////////////////////////
                            REJECTED CALLS
    //////////////////////////////////////////////////////////////*/

    /// @notice Every lifecycle call whose status does not fit the task, each
    /// made by the actor it requires: all must revert with
    /// TaskEscrowInvalidStatus(id, status). On a terminal task that is every
    /// call (so nothing settles twice).
    function attemptInvalidStatus(uint256 taskSeed) external instrument("attemptInvalidStatus") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _any);
        if (!found) return;
        bytes memory expected =
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, t.status);
        for (uint256 fn; fn < 14; ++fn) {
            if (_statusFits(fn, t.status)) continue;
            (address caller, bytes memory data) = _lifecycleCall(fn, id, t);
            _expectRejected(caller, data, expected, id);
        }
    }

    /// @notice The call on the wrong side of the task's current window: too
    /// early (TaskEscrowTooEarly(end + 1)) or too late (TaskEscrowTooLate(end)).
    function attemptOutOfWindow(uint256 taskSeed, bool alternative)
        external
        instrument("attemptOutOfWindow")
    {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _isOpen);
        if (!found) return;
        _attemptOutOfWindow(id, t, alternative);
    }

    function _attemptOutOfWindow(uint256 id, ITaskEscrow.Task memory t, bool alternative) internal {
        uint256 end = _windowEnd(t);
        ITaskEscrow.Status s = t.status;
        if (block.timestamp <= end) {
            bytes memory tooEarly = abi.encodeWithSelector(ITaskEscrow.TaskEscrowTooEarly.selector, end + 1);
            bytes memory data;
            if (s == ITaskEscrow.Status.Created) {
                data = abi.encodeCall(ITaskEscrow.refundExpired, (id, t));
            } else if (s == ITaskEscrow.Status.Accepted) {
                if (alternative) {
                    address e = _pickExecutor(id, t.funder, t.client);
                    data = abi.encodeCall(
                        ITaskEscrow.reassignTask, (id, t, e, uint40(block.timestamp + 1 days), CAPABILITY)
                    );
                    _expectRejected(t.client, data, tooEarly, id);
                    return;
                }
                data = abi.encodeCall(ITaskEscrow.refundExpired, (id, t));
            } else if (s == ITaskEscrow.Status.Completed) {
                data = abi.encodeCall(ITaskEscrow.releasePayment, (id, t));
            } else if (s == ITaskEscrow.Status.Disputed) {
                data = abi.encodeCall(ITaskEscrow.claimDisputeDefault, (id, t));
            } else {
                data = abi.encodeCall(ITaskEscrow.finalizeRuling, (id, t)); // Ruled, Appealed
            }
            _expectRejected(_stranger, data, tooEarly, id);
        } else {
            address caller;
            bytes memory data;
            if (s == ITaskEscrow.Status.Created) {
                data = alternative
                    ? abi.encodeCall(ITaskEscrow.declineTask, (id, t, "late"))
                    : abi.encodeCall(ITaskEscrow.acceptTask, (id, t));
                caller = t.executor;
            } else if (s == ITaskEscrow.Status.Accepted) {
                data = alternative
                    ? abi.encodeCall(ITaskEscrow.declineTask, (id, t, "late"))
                    : abi.encodeCall(ITaskEscrow.completeTask, (id, t, "late"));
                caller = t.executor;
            } else if (s == ITaskEscrow.Status.Completed) {
                (caller, data) = (t.client, abi.encodeCall(ITaskEscrow.disputeTask, (id, t, "late")));
            } else if (s == ITaskEscrow.Status.Disputed) {
                (caller, data) = (arbiter, abi.encodeCall(ITaskEscrow.resolveDispute, (id, t, 5000, "late")));
            } else if (s == ITaskEscrow.Status.Ruled) {
                caller = alternative ? t.executor : t.client;
                data = abi.encodeCall(ITaskEscrow.appealRuling, (id, t, "late"));
            } else {
                (caller, data) =
                (appealArbiter, abi.encodeCall(ITaskEscrow.resolveAppeal, (id, t, 5000, "late")));
            }
            _expectRejected(
                caller, data, abi.encodeWithSelector(ITaskEscrow.TaskEscrowTooLate.selector, end), id
            );
        }
    }

    /// @notice Every role-gated call made by someone without the role (a
    /// stranger, the owner, an arbiter, or another party of the task): all
    /// must revert with TaskEscrowUnauthorized(caller), whatever the status.
    /// The owner-only pause must revert for anyone else.
    function attemptUnauthorized(uint256 taskSeed, uint256 actorSeed)
        external
        instrument("attemptUnauthorized")
    {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _any);
        if (!found) return;
        address[7] memory people = [_stranger, owner, arbiter, appealArbiter, t.funder, t.client, t.executor];
        // Role-gated lifecycle functions: accept, complete, approve, dispute,
        // resolveDispute, appeal, resolveAppeal, cancel, reassign, decline.
        uint8[10] memory gated = [0, 1, 2, 4, 5, 6, 7, 11, 12, 13];
        for (uint256 g; g < gated.length; ++g) {
            (address allowed, bytes memory data) = _lifecycleCall(gated[g], id, t);
            // Appeals are open to the client and the executor.
            address who =
                _someoneElse(people, actorSeed % 7 + g, allowed, gated[g] == 6 ? t.executor : allowed);
            _expectRejected(
                who, data, abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnauthorized.selector, who), id
            );
        }
        address notOwner = _someoneElse(people, actorSeed, owner, owner);
        _expectRejected(
            notOwner,
            abi.encodeCall(ITaskEscrow.pause, ()),
            abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, notOwner),
            id
        );
    }

    /// @dev Someone from `people`, starting at a random one, who is neither `a` nor `b`.
    function _someoneElse(address[7] memory people, uint256 seed, address a, address b)
        internal
        pure
        returns (address who)
    {
        for (uint256 k; k < 7; ++k) {
            who = people[(seed % 7 + k) % 7];
            if (who != a && who != b) return who;
        }
    }

    /// @notice A call with a task that differs from the stored one in a single
    /// field, or that is the stored task encoded non-canonically (dirty high
    /// bits in an address, an out-of-range status), must revert with
    /// TaskEscrowStaleTask; an id nobody created, with TaskEscrowUnknownTask.
    function attemptForged(uint256 taskSeed, uint256 fieldSeed) external instrument("attemptForged") {
        (bool found, uint256 id, ITaskEscrow.Task memory t) = _pick(taskSeed, _any);
        if (!found) return;
        uint256 field = fieldSeed % 12;
        if (field == 9) {
            uint256 unknown = uint256(keccak256(abi.encode(id, fieldSeed)));
            _expectRejected(
                _stranger,
                abi.encodeCall(ITaskEscrow.releasePayment, (unknown, t)),
                abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnknownTask.selector, unknown),
                unknown
            );
            return;
        }
        ITaskEscrow.Task memory f = abi.decode(abi.encode(t), (ITaskEscrow.Task));
        if (field == 0) f.funder = _stranger;
        else if (field == 1) f.executor = f.client;
        else if (field == 2) f.amount ^= 1;
        else if (field == 3) f.deadline ^= 1;
        else if (field == 4) f.updatedAt ^= 1;
        else if (field == 5) f.executorShareBps ^= 1;
        else if (field == 6) f.status = ITaskEscrow.Status((uint8(f.status) + 1 + fieldSeed % 12) % 13);
        else if (field == 7) f.resultHash ^= bytes32(uint256(1));
        else if (field == 8 && (fieldSeed >> 128) % 2 == 0) f.disputeWindow ^= 1;
        else if (field == 8) f.appealRulingWindow ^= 1;
        // Any lifecycle function loads the task first; use the permissionless ones.
        bytes memory data = fieldSeed % 2 == 0
            ? abi.encodeCall(ITaskEscrow.refundExpired, (id, f))
            : abi.encodeCall(ITaskEscrow.finalizeRuling, (id, f));
        if (field >= 10) {
            // The stored task, dirtied in its raw encoding: selector, id, then 14 words.
            uint256 word = field == 10 ? 11 : (fieldSeed / 12) % 3; // status, or funder/client/executor
            uint256 dirt = field == 10 ? 13 + (fieldSeed >> 8) % 243 : 1 << (160 + (fieldSeed >> 8) % 96);
            assembly ("memory-safe") {
                let p := add(add(data, 0x44), mul(word, 0x20)) // 0x20 length + 4 selector + 0x20 id
                let v := mload(p)
                switch eq(word, 11)
                case 1 { mstore(p, dirt) }
                default { mstore(p, or(v, dirt)) }
            }
        }
        _expectRejected(
            _stranger, data, abi.encodeWithSelector(ITaskEscrow.TaskEscrowStaleTask.selector, id), id
        );
    }

    /*//////////////////////////////////////////////////////////////
                        END OF RUN (not targeted)
    //////////////////////////////////////////////////////////////*/

    /// @notice Warps past every window and settles every open task the
    /// permissionless way; afterwards the escrow must hold nothing.
    function settleAll() external instrument("settleAll") {
        _setTime(store.time() + 60 days);
        uint256 n = store.taskCount();
        for (uint256 i; i < n; ++i) {
            uint256 id = store.taskIdAt(i);
            ITaskEscrow.Task memory t = store.task(id);
            ITaskEscrow.Status from = t.status;
            if (_isTerminal(from)) continue;
            _observeStart();
            vm.prank(_stranger);
            if (from == ITaskEscrow.Status.Created || from == ITaskEscrow.Status.Accepted) {
                escrow.refundExpired(id, t);
                t = _settled(t, 0, ITaskEscrow.Settlement.Expired);
            } else if (from == ITaskEscrow.Status.Completed) {
                escrow.releasePayment(id, t);
                t = _settled(t, BPS, ITaskEscrow.Settlement.AutoReleased);
            } else if (from == ITaskEscrow.Status.Disputed) {
                escrow.claimDisputeDefault(id, t);
                t = _settled(t, 0, ITaskEscrow.Settlement.DisputeDefault);
            } else {
                escrow.finalizeRuling(id, t);
                t = _settled(t, t.executorShareBps, ITaskEscrow.Settlement.RulingFinalized);
            }
            _commit(id, from, t);
        }
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    function _commit(uint256 id, ITaskEscrow.Status from, ITaskEscrow.Task memory t) internal {
        store.setTask(id, t);
        _observeEnd(id, from);
    }

    /// @dev A ruling: all to the funder, all to the executor, or anything between.
    function _share(uint256 seed) internal pure returns (uint16) {
        uint256 kind = seed % 4;
        if (kind == 0) return 0;
        if (kind == 1) return BPS;
        return uint16(bound(seed / 4, 1, BPS - 1));
    }

    /// @dev Permissionless calls come from anyone: a stranger or one of the parties.
    function _anyone(uint256 seed, ITaskEscrow.Task memory t) internal view returns (address) {
        uint256 k = seed % 4;
        if (k == 0) return _stranger;
        if (k == 1) return t.client;
        if (k == 2) return t.executor;
        return t.funder;
    }

    /// @dev Whether lifecycle function `fn` accepts a task in status `s` (time aside).
    function _statusFits(uint256 fn, ITaskEscrow.Status s) internal pure returns (bool) {
        if (fn == 0 || fn == 11) return s == ITaskEscrow.Status.Created; // accept, cancel
        if (fn == 13) return s == ITaskEscrow.Status.Created || s == ITaskEscrow.Status.Accepted; // decline
        if (fn == 1) return s == ITaskEscrow.Status.Accepted; // complete
        if (fn <= 4) return s == ITaskEscrow.Status.Completed; // approve, release, dispute
        if (fn == 5 || fn == 9) return s == ITaskEscrow.Status.Disputed; // resolveDispute, claimDefault
        if (fn == 6) return s == ITaskEscrow.Status.Ruled; // appeal
        if (fn == 7) return s == ITaskEscrow.Status.Appealed; // resolveAppeal
        if (fn == 8) return s == ITaskEscrow.Status.Ruled || s == ITaskEscrow.Status.Appealed; // finalize
        return s == ITaskEscrow.Status.Created || s == ITaskEscrow.Status.Accepted; // refundExpired, reassign
    }

    /// @dev Lifecycle function `fn` on task `t`, called by the actor it requires.
    function _lifecycleCall(uint256 fn, uint256 id, ITaskEscrow.Task memory t)
        internal
        view
        returns (address caller, bytes memory data)
    {
        if (fn == 0) return (t.executor, abi.encodeCall(ITaskEscrow.acceptTask, (id, t)));
        if (fn == 1) return (t.executor, abi.encodeCall(ITaskEscrow.completeTask, (id, t, "r")));
        if (fn == 2) return (t.client, abi.encodeCall(ITaskEscrow.approvePayment, (id, t, RATING)));
        if (fn == 3) return (_stranger, abi.encodeCall(ITaskEscrow.releasePayment, (id, t)));
        if (fn == 4) return (t.client, abi.encodeCall(ITaskEscrow.disputeTask, (id, t, "r")));
        if (fn == 5) return (arbiter, abi.encodeCall(ITaskEscrow.resolveDispute, (id, t, BPS, "r")));
        if (fn == 6) return (t.client, abi.encodeCall(ITaskEscrow.appealRuling, (id, t, "r")));
        if (fn == 7) return (appealArbiter, abi.encodeCall(ITaskEscrow.resolveAppeal, (id, t, BPS, "r")));
        if (fn == 8) return (_stranger, abi.encodeCall(ITaskEscrow.finalizeRuling, (id, t)));
        if (fn == 9) return (_stranger, abi.encodeCall(ITaskEscrow.claimDisputeDefault, (id, t)));
        if (fn == 10) return (_stranger, abi.encodeCall(ITaskEscrow.refundExpired, (id, t)));
        if (fn == 11) return (t.client, abi.encodeCall(ITaskEscrow.cancelTask, (id, t)));
        if (fn == 13) return (t.executor, abi.encodeCall(ITaskEscrow.declineTask, (id, t, "r")));
        address e = _pickExecutor(id, t.funder, t.client);
        return (
            t.client,
            abi.encodeCall(ITaskEscrow.reassignTask, (id, t, e, uint40(block.timestamp + 1 days), CAPABILITY))
        );
    }
}
