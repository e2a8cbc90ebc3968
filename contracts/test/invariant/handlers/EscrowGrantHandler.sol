// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {TaskEscrow} from "../../../src/TaskEscrow.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {Vm} from "../../utils/Vm.sol";
import {EscrowStore} from "../stores/EscrowStore.sol";
import {GrantStore} from "../stores/GrantStore.sol";
import {EscrowBaseHandler} from "./EscrowBaseHandler.sol";

/// @notice Plays sponsors who sign grants (the funders' keys) and one operator
/// who spends them with createWithGrants; the sponsors revoke, grants expire,
/// and strangers try to spend them or move them to another plan. Some uses
/// create the grant's mark (one of their tasks referenced by the digest: id
/// grantMarkId), on a first use or late, some first uses spend the whole budget
/// at once, grants a marked first use spent in full are replayed, and the
/// digest is given again once the mark exists. Every created task joins the
/// escrow store (a mark flagged as one), so the lifecycle handler settles it like
/// any other; every grant's terms, funded sum and mark are in the grant store.
contract EscrowGrantHandler is EscrowBaseHandler {
    /// @dev Live grants at a time; a revoked or expired one is replaced by a fresh one.
    uint256 internal constant LIVE = 4;
    /// @dev A call none of whose tasks is referenced by the grant's digest.
    uint256 internal constant NO_MARK = type(uint256).max;

    GrantStore public immutable grants;
    address public immutable operator;
    uint256[LIVE] internal _live;
    uint256 internal _nonce;

    constructor(TaskEscrow escrow_, MockUSDC usdc_, EscrowStore store_, GrantStore grants_, address owner_)
        EscrowBaseHandler(escrow_, usdc_, store_, owner_)
    {
        grants = grants_;
        operator = _named("inv-operator");
        for (uint256 i; i < LIVE; ++i) {
            _live[i] = _newGrant(i, uint256(keccak256(abi.encode("grant", i))));
        }
    }

    /// @dev A fresh grant of sponsor `_funders[slot % 3]`: a budget from dust to
    /// 10,000 USDC, valid from one hour to ten days.
    function _newGrant(uint256 slot, uint256 seed) internal returns (uint256) {
        ITaskEscrow.Grant memory g = ITaskEscrow.Grant({
            sponsor: _funders[slot % _funders.length],
            planId: keccak256(abi.encode("grant-plan", slot, ++_nonce)),
            operator: operator,
            budget: uint128(seed % 5 == 0 ? bound(seed, 1, 1000) : bound(seed, 1000, 1e10)),
            validUntil: uint40(block.timestamp + bound(seed >> 64, 1 hours, 10 days)),
            nonce: _nonce
        });
        return grants.add(g, escrow.grantDigest(g));
    }

    function _sign(GrantStore.Ghost memory x) internal view returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(_keys[x.grant.sponsor], x.digest);
        return abi.encodePacked(r, s, v);
    }

    /// @dev What a creation under `x` of `sum` must revert with right now (empty: succeed).
    function _expected(GrantStore.Ghost memory x, uint256 sum) internal view returns (bytes memory) {
        if (escrow.paused()) return abi.encodeWithSelector(Pausable.EnforcedPause.selector);
        if (block.timestamp > x.grant.validUntil) {
            return abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantExpired.selector, x.grant.validUntil);
        }
        if (x.revoked) return abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantRevoked.selector, x.digest);
        // Used in full by a first use that created its mark: no slot, the mark exists.
        if (x.markedFull) return abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantUsed.selector, x.digest);
        if (x.funded + sum > x.grant.budget) {
            return abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowGrantBudget.selector, x.digest, x.grant.budget, x.funded + sum
            );
        }
        return "";
    }

    /// @notice The operator creates 1..=4 tasks under a live grant, their
    /// amounts drawn up to the whole budget so that some calls overspend. Two
    /// calls in five spend exactly what is left (a first use: the whole budget);
    /// one call in three, while the grant has no mark, gives one of its tasks the
    /// grant's digest as reference: that task is the grant's mark, id grantMarkId
    /// (on a first use that spends the whole budget, no slot is written; on a
    /// later use, the slot is written as ever).
    function createWithGrant(uint256 grantSeed, uint256 seed, uint8 count)
        external
        instrument("createWithGrant")
    {
        uint256 slot = grantSeed % LIVE;
        uint256 index = _live[slot];
        GrantStore.Ghost memory x = grants.ghost(index);
        (ITaskEscrow.CreateParams[] memory ps, uint256 sum, uint256 markAt) = _batch(x, seed, count);
        ITaskEscrow.GrantedBatch[] memory bs = new ITaskEscrow.GrantedBatch[](1);
        // Once a grant has funded a task, its signature is no longer needed.
        bytes memory sig = x.funded != 0 && seed % 3 == 0 ? bytes("") : _sign(x);
        bs[0] = ITaskEscrow.GrantedBatch({grant: x.grant, signature: sig, params: ps});
        bytes memory expected = _expected(x, sum);

        vm.recordLogs();
        vm.prank(operator);
        try escrow.createWithGrants(bs) returns (uint256[] memory ids) {
            Vm.Log[] memory logs = vm.getRecordedLogs();
            // Whatever was expected, the grant funded the sum: the budget invariant sees it.
            grants.addFunded(index, sum, ps.length);
            if (expected.length != 0) {
                store.recordUnexpectedSuccess();
                return;
            }
            _record(x, ps, ids, logs, sum);
            // The task referenced by the digest is the grant's mark, whatever id it
            // got (the invariants check it). Nothing funded before: the slot was
            // zero, this was the first use, and spending the whole budget it wrote
            // no slot.
            if (markAt != NO_MARK) {
                store.setMark(ids[markAt]);
                grants.recordMark(index, x.funded == 0 && sum == x.grant.budget, ids[markAt]);
            }
        } catch (bytes memory err) {
            vm.getRecordedLogs();
            if (expected.length != 0 && keccak256(err) == keccak256(expected)) store.recordExpectedRevert();
            else store.recordWrongRevert(err);
        }
        if (escrow.paused()) {
            vm.prank(owner);
            escrow.unpause();
        }
        // An expired grant is done with: the sponsor signs a new one.
        if (block.timestamp > x.grant.validUntil) _live[slot] = _newGrant(slot, seed);
    }

    /// @dev The 1..=4 tasks of a call under `x`, their sum, and which one is
    /// referenced by the digest ({NO_MARK}: none). Two calls in five spend exactly
    /// what is left of the budget (on a first use, the whole budget).
    function _batch(GrantStore.Ghost memory x, uint256 seed, uint8 count)
        internal
        view
        returns (ITaskEscrow.CreateParams[] memory ps, uint256 sum, uint256 markAt)
    {
        uint256 n = bound(count, 1, 4);
        uint256 left = x.funded < x.grant.budget ? x.grant.budget - x.funded : 0;
        bool rest = left != 0 && (seed >> 64) % 5 < 2;
        if (rest && n > left) n = left;
        ps = new ITaskEscrow.CreateParams[](n);
        for (uint256 i; i < n; ++i) {
            ps[i] = _params(x, uint256(keccak256(abi.encode(seed, i))));
            if (rest) ps[i].amount = _share(left, n, i);
            sum += ps[i].amount;
        }
        markAt = NO_MARK;
        if ((seed >> 128) % 3 == 0 && !_markExists(x)) {
            markAt = (seed >> 160) % n;
            ps[markAt].ref = x.digest;
        }
    }

    /// @dev Task `i` of `n` sharing `total` exactly: equal parts, the last one the rest.
    function _share(uint256 total, uint256 n, uint256 i) internal pure returns (uint128) {
        uint256 part = total / n;
        return uint128(i + 1 < n ? part : total - (n - 1) * part);
    }

    /// @dev Whether `x`'s mark exists: its task referenced by its digest, id grantMarkId.
    function _markExists(GrantStore.Ghost memory x) internal view returns (bool) {
        return escrow.taskHash(escrow.grantMarkId(x.grant)) != 0;
    }

    /// @notice The sponsor revokes a live grant (then signs a new one); a
    /// second revocation and a creation under the revoked grant must revert.
    function revoke(uint256 grantSeed, uint256 seed) external instrument("revokeGrant") {
        uint256 slot = grantSeed % LIVE;
        uint256 index = _live[slot];
        GrantStore.Ghost memory x = grants.ghost(index);
        vm.prank(x.grant.sponsor);
        escrow.revokeGrant(x.grant);
        grants.setRevoked(index);
        x.revoked = true;

        vm.prank(x.grant.sponsor);
        try escrow.revokeGrant(x.grant) {
            store.recordUnexpectedSuccess();
        } catch (bytes memory err) {
            _check(err, abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantRevoked.selector, x.digest));
        }
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](1);
        ps[0] = _params(x, seed);
        _attempt(operator, index, x, ps, _expected(x, ps[0].amount));
        _live[slot] = _newGrant(slot, seed);
    }

    /// @notice Anyone but the operator tries to spend a live grant; then the
    /// operator tries to move it to another plan; then, if it has a mark, to
    /// create another task referenced by its digest (the mark's id is taken); then
    /// the operator replays a grant that a marked first use spent in full (live or
    /// not): with fresh params of the least amount, then with the digest as
    /// reference again.
    function attemptMisuse(uint256 grantSeed, uint256 callerSeed, uint256 seed)
        external
        instrument("attemptGrantMisuse")
    {
        uint256 index = _live[grantSeed % LIVE];
        GrantStore.Ghost memory x = grants.ghost(index);
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](1);
        ps[0] = _params(x, seed);
        address[] storage pool = callerSeed % 3 == 0 ? _funders : callerSeed % 3 == 1 ? _clients : _executors;
        address caller = _actor(pool, callerSeed / 3);
        bytes memory expected = escrow.paused()
            ? abi.encodeWithSelector(Pausable.EnforcedPause.selector)
            : abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantOperator.selector, caller);
        _attempt(caller, index, x, ps, expected);

        ps[0].planId = keccak256(abi.encode("another plan", seed));
        expected = _expected(x, 0);
        if (expected.length == 0) {
            expected = abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantPlan.selector, 0, ps[0].planId);
        }
        _attempt(operator, index, x, ps, expected);

        if (x.marked) {
            ps[0] = _params(x, seed >> 2);
            ps[0].ref = x.digest;
            // Checked before the task: paused, expired, revoked, or spent in full by its marked first use.
            expected = _expected(x, 0);
            if (expected.length == 0) {
                expected = abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 0, x.digest);
            }
            _attempt(operator, index, x, ps, expected);
        }

        (bool found, uint256 used) = grants.pickMarkedFull(seed);
        if (!found) return;
        GrantStore.Ghost memory y = grants.ghost(used);
        ps[0] = _params(y, seed >> 1);
        // Within the budget, were the grant's zero slot all the escrow read.
        ps[0].amount = 1;
        expected = _expected(y, 1);
        _attempt(operator, used, y, ps, expected);
        ps[0].ref = y.digest;
        _attempt(operator, used, y, ps, expected);
        grants.recordReplay();
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    function _params(GrantStore.Ghost memory x, uint256 s)
        internal
        view
        returns (ITaskEscrow.CreateParams memory p)
    {
        address client = _pickClient(s);
        uint256 cap = x.grant.budget;
        bytes32 ref = keccak256(abi.encode("granted", s));
        while (escrow.taskHash(escrow.taskIdFor(x.grant.sponsor, ref)) != 0) {
            ref = keccak256(abi.encode(ref));
        }
        p = ITaskEscrow.CreateParams({
            ref: ref,
            planId: x.grant.planId,
            parentId: 0,
            capability: CAPABILITY,
            client: client,
            executor: _pickExecutor(s >> 8, x.grant.sponsor, client),
            // Up to half the budget, one time in four up to all of it.
            amount: uint128(bound(s >> 16, 1, s % 4 == 0 ? cap : (cap + 1) / 2)),
            deadline: uint40(block.timestamp + bound(s >> 24, 1 hours, 7 days)),
            reviewWindow: 1 days,
            specURI: "ipfs://granted-spec"
        });
    }

    /// @dev A creation under grant `index` that must revert with `expected`; one
    /// that succeeds is recorded, and what it funded counts against the grant.
    function _attempt(
        address caller,
        uint256 index,
        GrantStore.Ghost memory x,
        ITaskEscrow.CreateParams[] memory ps,
        bytes memory expected
    ) internal {
        ITaskEscrow.GrantedBatch[] memory bs = new ITaskEscrow.GrantedBatch[](1);
        bs[0] = ITaskEscrow.GrantedBatch({grant: x.grant, signature: _sign(x), params: ps});
        vm.prank(caller);
        try escrow.createWithGrants(bs) {
            store.recordUnexpectedSuccess();
            uint256 sum;
            for (uint256 i; i < ps.length; ++i) {
                sum += ps[i].amount;
            }
            grants.addFunded(index, sum, ps.length);
        } catch (bytes memory err) {
            _check(err, expected);
        }
    }

    function _check(bytes memory err, bytes memory expected) internal {
        if (keccak256(err) == keccak256(expected)) store.recordExpectedRevert();
        else store.recordWrongRevert(err);
    }

    /// @dev Records the created tasks in the escrow store, checking that the one
    /// transfer came from the sponsor and carried exactly the sum.
    function _record(
        GrantStore.Ghost memory x,
        ITaskEscrow.CreateParams[] memory ps,
        uint256[] memory ids,
        Vm.Log[] memory logs,
        uint256 sum
    ) internal {
        uint256 pulled;
        for (uint256 i; i < logs.length; ++i) {
            Vm.Log memory l = logs[i];
            if (l.emitter != address(usdc) || l.topics[0] != IERC20.Transfer.selector) continue;
            if (address(uint160(uint256(l.topics[2]))) != address(escrow)) continue;
            if (address(uint160(uint256(l.topics[1]))) != x.grant.sponsor) {
                store.recordWrongRevert(abi.encode("a granted task was funded by another than the sponsor"));
            }
            pulled += abi.decode(l.data, (uint256));
        }
        if (pulled != sum) {
            store.recordWrongRevert(abi.encode("grant pulled other than the sum", pulled, sum));
        }
        _recordCreated(x.grant.sponsor, ps, ids);
    }

    /// @notice Every grant the handler signed, for the invariants.
    function grantCount() external view returns (uint256) {
        return grants.count();
    }
}
