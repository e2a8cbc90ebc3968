// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {Base} from "../Base.t.sol";
import {EscrowCreateHandler} from "./handlers/EscrowCreateHandler.sol";
import {EscrowGrantHandler} from "./handlers/EscrowGrantHandler.sol";
import {EscrowLifecycleHandler} from "./handlers/EscrowLifecycleHandler.sol";
import {EscrowStore} from "./stores/EscrowStore.sol";
import {GrantStore} from "./stores/GrantStore.sol";

/// @notice Invariants of TaskEscrow under random sequences of creations,
/// lifecycle calls, rejected calls, owner actions and time jumps. See README.md.
contract Escrow_Invariant_Test is Base {
    uint16 internal constant BPS = 10_000;
    uint256 internal constant FUNDER_BALANCE = 1e18;

    EscrowStore internal store;
    EscrowCreateHandler internal createHandler;
    EscrowLifecycleHandler internal lifecycleHandler;
    GrantStore internal grantStore;
    EscrowGrantHandler internal grantHandler;
    uint256 internal initialSupply;

    function setUp() public override {
        Base.setUp();
        store = new EscrowStore();
        store.setTime(block.timestamp);
        createHandler = new EscrowCreateHandler(escrow, usdc, store, owner);
        lifecycleHandler = new EscrowLifecycleHandler(escrow, usdc, store, owner);
        grantStore = new GrantStore();
        grantHandler = new EscrowGrantHandler(escrow, usdc, store, grantStore, owner);

        address[] memory fs = createHandler.funders();
        for (uint256 i; i < fs.length; ++i) {
            vm.prank(owner);
            usdc.mint(fs[i], FUNDER_BALANCE);
            vm.prank(fs[i]);
            usdc.approve(address(escrow), type(uint256).max);
        }
        initialSupply = usdc.totalSupply();

        // Selectors are weighted by repeating them: creation and the steps that
        // lead deeper into the lifecycle (dispute, ruling, appeal) come up more
        // often, so runs of 100 calls reach every status.
        _target(address(createHandler), EscrowCreateHandler.createTask.selector, 4);
        _target(address(createHandler), EscrowCreateHandler.createTasks.selector, 2);
        _target(address(createHandler), EscrowCreateHandler.attemptDuplicateRef.selector, 1);
        _target(address(createHandler), EscrowCreateHandler.setWindows.selector, 1);
        _target(address(createHandler), EscrowCreateHandler.togglePause.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.acceptTask.selector, 3);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.completeTask.selector, 3);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.approvePayment.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.approvePayments.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.deliver.selector, 2);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.releasePayment.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.disputeTask.selector, 3);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.resolveDispute.selector, 3);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.appealRuling.selector, 3);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.resolveAppeal.selector, 2);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.finalizeRuling.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.claimDisputeDefault.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.refundExpired.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.cancelTask.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.reassignTask.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.declineTask.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.warp.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.warpToBoundary.selector, 2);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.attemptInvalidStatus.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.attemptOutOfWindow.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.attemptForged.selector, 1);
        _target(address(lifecycleHandler), EscrowLifecycleHandler.attemptUnauthorized.selector, 1);
        _target(address(grantHandler), EscrowGrantHandler.createWithGrant.selector, 3);
        _target(address(grantHandler), EscrowGrantHandler.revoke.selector, 1);
        _target(address(grantHandler), EscrowGrantHandler.attemptMisuse.selector, 1);
        _commitTargets(address(createHandler));
        _commitTargets(address(grantHandler));
        _commitTargets(address(lifecycleHandler));
    }

    /*//////////////////////////////////////////////////////////////
                                INVARIANTS
    //////////////////////////////////////////////////////////////*/

    /// @dev 1. The escrow holds exactly the amounts of the tasks still open, and
    /// escrow calls never change the token's total supply.
    function invariant_tokenConservation() external view {
        (, ITaskEscrow.Task[] memory tasks,) = store.all();
        uint256 open;
        for (uint256 i; i < tasks.length; ++i) {
            if (!_terminal(tasks[i].status)) open += tasks[i].amount;
        }
        assertEq(usdc.balanceOf(address(escrow)), open, "escrow balance == sum of open task amounts");
        assertEq(usdc.totalSupply(), initialSupply, "total supply unchanged");
        assertEq(store.supplyChanges(), 0, "no escrow call changed the total supply");
    }

    /// @dev 2. Every task was funded with exactly its amount; a terminal task
    /// paid all of it out, an open task none of it.
    function invariant_terminalTasksHoldNothing() external view {
        (, ITaskEscrow.Task[] memory tasks, EscrowStore.Record[] memory records) = store.all();
        for (uint256 i; i < tasks.length; ++i) {
            EscrowStore.Record memory r = records[i];
            assertEq(r.funded, tasks[i].amount, "funded == amount");
            uint256 out = uint256(r.paidOut) + r.refunded + r.misdirected;
            if (_terminal(tasks[i].status)) {
                assertEq(out, r.funded, "terminal: paid out + refunded == funded");
            } else {
                assertEq(out, 0, "open: nothing paid out");
            }
        }
    }

    /// @dev 3. Every status change observed on chain is an allowed one, and no
    /// call made in the wrong status or time succeeded.
    function invariant_statusTransitions() external view {
        uint256[13][13] memory seen = store.allTransitions();
        for (uint256 from; from < 13; ++from) {
            for (uint256 to; to < 13; ++to) {
                if (seen[from][to] == 0) continue;
                assertTrue(
                    _allowed(ITaskEscrow.Status(from), ITaskEscrow.Status(to)),
                    string.concat("disallowed transition ", _digits(from), " -> ", _digits(to))
                );
            }
        }
        assertEq(store.unexpectedSuccesses(), 0, "a call that must be rejected succeeded");
    }

    /// @dev 4. No task settles twice: one settlement per terminal task, none
    /// for open ones, and never more tokens out than in.
    function invariant_noTaskPaidTwice() external view {
        (, ITaskEscrow.Task[] memory tasks, EscrowStore.Record[] memory records) = store.all();
        for (uint256 i; i < tasks.length; ++i) {
            EscrowStore.Record memory r = records[i];
            assertLe(r.settlements, 1, "settled at most once");
            assertEq(r.settlements, _terminal(tasks[i].status) ? 1 : 0, "settled iff terminal");
            assertLe(
                uint256(r.paidOut) + r.refunded + r.misdirected, tasks[i].amount, "never more out than in"
            );
        }
    }

    /// @dev 5. Every token that left the escrow went to that task's funder or
    /// executor, and the funder's side of a settlement went to the funder.
    function invariant_refundsOnlyToFunder() external view {
        (uint256[] memory ids, ITaskEscrow.Task[] memory tasks, EscrowStore.Record[] memory records) =
            store.all();
        EscrowStore.Outflow[] memory outs = store.outflows();
        for (uint256 i; i < outs.length; ++i) {
            uint256 k;
            while (k < ids.length && ids[k] != outs[i].taskId) ++k;
            assertTrue(k < ids.length, "outflow for a known task");
            assertTrue(
                outs[i].to == tasks[k].funder || outs[i].to == tasks[k].executor,
                "outflow only to funder or executor"
            );
        }
        for (uint256 i; i < tasks.length; ++i) {
            ITaskEscrow.Task memory t = tasks[i];
            EscrowStore.Record memory r = records[i];
            assertEq(r.misdirected, 0, "nothing to third parties");
            if (!_terminal(t.status)) continue;
            uint256 funderShare = t.amount - (uint256(t.amount) * t.executorShareBps) / BPS;
            assertEq(r.refunded, funderShare, "funder got exactly the funder share");
            if (
                t.status == ITaskEscrow.Status.Refunded || t.status == ITaskEscrow.Status.Cancelled
                    || t.status == ITaskEscrow.Status.Expired || t.status == ITaskEscrow.Status.Declined
            ) {
                assertEq(r.refunded, t.amount, "refund: all to the funder");
                assertEq(r.paidOut, 0, "refund: nothing to the executor");
            }
        }
    }

    /// @dev 6. A settlement's two shares sum exactly to the amount, follow the
    /// ruling's basis points, match the tokens moved and the terminal status.
    function invariant_splitSharesSumToAmount() external view {
        (, ITaskEscrow.Task[] memory tasks, EscrowStore.Record[] memory records) = store.all();
        for (uint256 i; i < tasks.length; ++i) {
            ITaskEscrow.Task memory t = tasks[i];
            if (!_terminal(t.status)) continue;
            EscrowStore.Record memory r = records[i];
            assertEq(
                uint256(r.settledExecutorAmount) + r.settledFunderAmount, t.amount, "shares sum to amount"
            );
            assertEq(
                r.settledExecutorAmount, (uint256(t.amount) * t.executorShareBps) / BPS, "executor share"
            );
            assertEq(r.paidOut, r.settledExecutorAmount, "executor got its share");
            assertEq(r.refunded, r.settledFunderAmount, "funder got its share");
            assertEq(r.settledStatus, uint8(t.status), "settled status");
            if (t.status == ITaskEscrow.Status.Split) {
                assertTrue(
                    r.settledExecutorAmount != 0 && r.settledFunderAmount != 0, "split: both sides paid"
                );
            } else if (t.status == ITaskEscrow.Status.Paid) {
                assertEq(r.settledFunderAmount, 0, "paid: nothing to the funder");
            } else if (t.status == ITaskEscrow.Status.Refunded) {
                assertEq(r.settledExecutorAmount, 0, "refunded: nothing to the executor");
            }
        }
    }

    /// @dev 7. Task ids are distinct and derive from (funder, ref), but for a
    /// grant's mark (the grant's task referenced by its digest), whose id is
    /// `grantMarkId`, the hash of (sponsor, digest, 1); every mark is its grant's,
    /// and no grant has a mark it did not create. Re-creating with a used
    /// (funder, ref) always reverted.
    function invariant_referencesUnique() external view {
        assertEq(store.duplicateIds(), 0, "a creation returned an existing id");
        assertEq(store.duplicateRefsAccepted(), 0, "a used reference was accepted");
        (uint256[] memory ids,, EscrowStore.Record[] memory records) = store.all();
        uint256 marks;
        for (uint256 i; i < ids.length; ++i) {
            if (records[i].mark) {
                assertEq(
                    uint256(keccak256(abi.encode(records[i].funder, records[i].ref, uint256(1)))),
                    ids[i],
                    "a mark's id == H(sponsor, digest, 1)"
                );
                ++marks;
            } else {
                assertEq(
                    uint256(keccak256(abi.encode(records[i].funder, records[i].ref))),
                    ids[i],
                    "id == H(funder, ref)"
                );
            }
            for (uint256 j = i + 1; j < ids.length; ++j) {
                assertNotEq(ids[i], ids[j], "ids distinct");
            }
        }
        if (ids.length != 0 && !records[0].mark) {
            assertEq(
                escrow.taskIdFor(records[0].funder, records[0].ref), ids[0], "taskIdFor(funder, ref) == id"
            );
        }
        uint256 n = grantStore.count();
        uint256 marked;
        for (uint256 i; i < n; ++i) {
            GrantStore.Ghost memory x = grantStore.ghost(i);
            uint256 markId = escrow.grantMarkId(x.grant);
            if (!x.marked) {
                assertEq(escrow.taskHash(markId), bytes32(0), "no mark the grant did not create");
                continue;
            }
            ++marked;
            assertEq(x.markId, markId, "the mark's id == grantMarkId(grant)");
            EscrowStore.Record memory r = store.record(markId);
            assertTrue(r.mark, "the mark recorded as one");
            assertEq(r.funder, x.grant.sponsor, "the mark funded by the sponsor");
            assertEq(r.ref, x.digest, "the mark referenced by the digest");
            assertNotEq(
                markId, escrow.taskIdFor(x.grant.sponsor, x.digest), "a mark is no (sponsor, digest) task"
            );
        }
        assertEq(marks, marked, "every mark is a grant's");
    }

    /// @dev 8. The stored hash of every task is the hash of its ghost Task.
    function invariant_storedHashMatchesGhost() external view {
        (uint256[] memory ids, ITaskEscrow.Task[] memory tasks,) = store.all();
        for (uint256 i; i < ids.length; ++i) {
            assertEq(
                escrow.taskHash(ids[i]), keccak256(abi.encode(tasks[i])), "stored hash == keccak256(ghost)"
            );
        }
        if (ids.length != 0) {
            assertEq(
                escrow.hashTask(tasks[0]), keccak256(abi.encode(tasks[0])), "hashTask == keccak256(task)"
            );
        }
    }

    /// @dev 9. Every call made to be rejected was rejected with exactly the
    /// expected error (wrong status, outside a window, forged or unknown task,
    /// used reference, paused).
    function invariant_rejectedCallsRevertExactly() external view {
        if (store.wrongReverts() != 0) {
            fail(string.concat("unexpected revert data: ", _hex(store.lastWrongRevert())));
        }
    }

    /// @dev 9a. The sum funded under a grant never exceeds its budget: for every
    /// grant signed, the ghost sum of the amounts of the tasks it funded (by any
    /// call that succeeded, replays included) is at most the budget; what the
    /// escrow counts as spent (`grantSpent`, which counts a marked first use that
    /// spent the whole budget as the budget) equals that sum; the grant's slot
    /// (`grantState`) holds it too, but for such a use, which leaves it at zero;
    /// its revocation is the ghost's.
    function invariant_grantsWithinBudget() external view {
        uint256 n = grantStore.count();
        for (uint256 i; i < n; ++i) {
            GrantStore.Ghost memory x = grantStore.ghost(i);
            assertLe(x.funded, x.grant.budget, "the escrow never funded more than the budget");
            (uint128 spent, bool revoked) = escrow.grantSpent(x.grant);
            assertLe(spent, x.grant.budget, "spent <= budget");
            assertEq(spent, x.funded, "spent == ghost sum of funded amounts");
            assertEq(revoked, x.revoked, "revoked as the ghost");
            (uint128 slot, bool slotRevoked) = escrow.grantState(x.digest);
            assertEq(slot, x.markedFull ? 0 : x.funded, "slot: the sum, zero after a marked full first use");
            assertEq(slotRevoked, x.revoked, "slot revoked as the ghost");
        }
    }

    /// @dev After each run: once every window has passed, anyone can settle
    /// every open task, and the escrow ends up empty.
    function afterInvariant() external {
        lifecycleHandler.settleAll();
        assertEq(usdc.balanceOf(address(escrow)), 0, "escrow empty once everything settled");
        uint256 n = store.taskCount();
        for (uint256 i; i < n; ++i) {
            uint256 id = store.taskIdAt(i);
            ITaskEscrow.Task memory t = store.task(id);
            assertTrue(_terminal(t.status), "every task terminal");
            assertEq(escrow.taskHash(id), keccak256(abi.encode(t)), "stored hash after settling");
            assertEq(store.record(id).settlements, 1, "settled once");
        }
        assertEq(usdc.totalSupply(), initialSupply, "total supply unchanged");
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    mapping(address handler => bytes4[]) internal _selectors;

    /// @dev Adds `selector` of `handler` `weight` times (forge picks uniformly among entries).
    function _target(address handler, bytes4 selector, uint256 weight) internal {
        for (uint256 i; i < weight; ++i) {
            _selectors[handler].push(selector);
        }
    }

    function _commitTargets(address handler) internal {
        targetContract(handler);
        targetSelector(FuzzSelector({addr: handler, selectors: _selectors[handler]}));
    }

    function _terminal(ITaskEscrow.Status s) internal pure returns (bool) {
        return s >= ITaskEscrow.Status.Paid;
    }

    /// @dev The allowed set of status transitions.
    function _allowed(ITaskEscrow.Status from, ITaskEscrow.Status to) internal pure returns (bool) {
        if (from == ITaskEscrow.Status.None) return to == ITaskEscrow.Status.Created;
        if (from == ITaskEscrow.Status.Created) {
            return to == ITaskEscrow.Status.Accepted || to == ITaskEscrow.Status.Completed // deliver
                || to == ITaskEscrow.Status.Cancelled || to == ITaskEscrow.Status.Expired
                || to == ITaskEscrow.Status.Declined // before its deadline
                || to == ITaskEscrow.Status.Created; // reassign
        }
        if (from == ITaskEscrow.Status.Accepted) {
            return to == ITaskEscrow.Status.Completed || to == ITaskEscrow.Status.Expired
                || to == ITaskEscrow.Status.Declined // before its deadline
                || to == ITaskEscrow.Status.Created; // reassign after a missed deadline
        }
        if (from == ITaskEscrow.Status.Completed) {
            return to == ITaskEscrow.Status.Paid || to == ITaskEscrow.Status.Disputed;
        }
        if (from == ITaskEscrow.Status.Disputed) {
            // Ruled; Paid/Refunded/Split when the appeal window is zero; Refunded by default.
            return to == ITaskEscrow.Status.Ruled || _settledByRuling(to);
        }
        if (from == ITaskEscrow.Status.Ruled) {
            return to == ITaskEscrow.Status.Appealed || _settledByRuling(to);
        }
        if (from == ITaskEscrow.Status.Appealed) return _settledByRuling(to);
        return false; // terminal: nothing
    }

    function _settledByRuling(ITaskEscrow.Status s) internal pure returns (bool) {
        return
            s == ITaskEscrow.Status.Paid || s == ITaskEscrow.Status.Refunded || s == ITaskEscrow.Status.Split;
    }

    function _digits(uint256 v) internal pure returns (string memory) {
        return v < 10 ? string(abi.encodePacked(bytes1(uint8(48 + v)))) : string.concat("1", _digits(v - 10));
    }

    function _hex(bytes memory data) internal pure returns (string memory) {
        bytes memory alphabet = "0123456789abcdef";
        bytes memory out = new bytes(2 + data.length * 2);
        out[0] = "0";
        out[1] = "x";
        for (uint256 i; i < data.length; ++i) {
            out[2 + i * 2] = alphabet[uint8(data[i]) >> 4];
            out[3 + i * 2] = alphabet[uint8(data[i]) & 0x0f];
        }
        return string(out);
    }
}
