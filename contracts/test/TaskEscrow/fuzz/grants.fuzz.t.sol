// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Fuzzed grants: any budget split into any amounts over several calls
/// funds exactly the calls that fit, and a grant funds nothing after its
/// validUntil, whatever the clock.
contract GrantsFuzzTest is GrantBase {
    /// @dev Up to six calls of one task each under one grant: a call succeeds
    /// iff what was funded before plus its amount stays within the budget; the
    /// grant's spent is the sum of the calls that succeeded, as is what the
    /// sponsor paid.
    function testFuzz_BudgetSplits(uint128 budget, uint128[6] memory amounts) public {
        budget = uint128(bound(budget, 1, 1e11));
        ITaskEscrow.Grant memory g = _grant();
        g.budget = budget;
        bytes memory sig = _sign(g);
        uint256 funded;
        uint256 sponsorBefore = usdc.balanceOf(sponsor);
        for (uint256 i; i < amounts.length; ++i) {
            // Half the time within what is left, else anywhere up to twice the budget.
            uint256 left = budget - funded;
            uint256 amount = i % 2 == 0 && left != 0
                ? bound(amounts[i], 1, left)
                : bound(amounts[i], 1, 2 * uint256(budget));
            ITaskEscrow.CreateParams[] memory ps = _grantParamsN(1);
            ps[0].amount = uint128(amount);
            ITaskEscrow.GrantedBatch[] memory bs = _one(g, sig, ps);
            vm.prank(operator);
            if (funded + amount > budget) {
                _expectGrantBudget(_digest(g), budget, funded + amount);
                escrow.createWithGrants(bs);
            } else {
                escrow.createWithGrants(bs);
                funded += amount;
            }
            assertEq(_spent(g), funded, "spent == sum of the calls that fit");
        }
        assertLe(_spent(g), budget, "spent <= budget");
        assertEq(sponsorBefore - usdc.balanceOf(sponsor), funded, "the sponsor paid exactly what was funded");
    }

    /// @dev Several tasks in one call: all or nothing against the budget.
    function testFuzz_BatchAgainstBudget(uint128 budget, uint128[4] memory amounts) public {
        budget = uint128(bound(budget, 4, 1e11));
        ITaskEscrow.Grant memory g = _grant();
        g.budget = budget;
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(4);
        uint256 sum;
        for (uint256 i; i < 4; ++i) {
            ps[i].amount = uint128(bound(amounts[i], 1, budget / 2));
            sum += ps[i].amount;
        }
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        if (sum > budget) _expectGrantBudget(_digest(g), budget, sum);
        escrow.createWithGrants(bs);
        assertEq(_spent(g), sum > budget ? 0 : sum, "all or nothing");
    }

    /// @dev A first use of 1..=3 tasks that creates the grant's mark (any one of
    /// them referenced by the digest: id grantMarkId, never taskIdFor), of any
    /// amount within any budget, then any second use: the mark spares the slot
    /// only when the first use spent the whole budget, and then every later use
    /// reverts with TaskEscrowGrantUsed; else the digest again is a duplicate of
    /// the mark. grantSpent is always what the sponsor paid.
    function testFuzz_MarkedFirstUse(uint128 budget, uint128 first, uint128 next, bool markAgain, uint8 shape)
        public
    {
        budget = uint128(bound(budget, 1, 1e11));
        first = uint128(bound(first, 1, budget));
        // One time in two the whole budget, else anything within it.
        if (next % 2 == 0) first = budget;
        next = uint128(bound(next, 1, 2 * uint256(budget)));
        ITaskEscrow.Grant memory g = _grant();
        g.budget = budget;
        bytes32 d = _digest(g);
        uint256 sponsorBefore = usdc.balanceOf(sponsor);
        bytes32 markHash = _markedFirstUse(g, first, shape);
        assertEq(_spentOf(g), first, "grantSpent: the first use");
        assertEq(_spent(g), first == budget ? 0 : first, "grantState: no slot iff the mark spent it all");

        // The second use, with or without the digest as reference (the mark's already).
        ITaskEscrow.CreateParams[] memory ps = markAgain ? _markedParamsN(g, 1) : _grantParamsN(1);
        ps[0].amount = next;
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        uint256 funded = first;
        vm.prank(operator);
        if (first == budget) {
            _expectGrantUsed(d);
        } else if (markAgain) {
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 0, d));
        } else if (first + uint256(next) > budget) {
            _expectGrantBudget(d, budget, first + uint256(next));
        } else {
            funded += next;
        }
        escrow.createWithGrants(bs);
        assertEq(escrow.taskHash(_markId(g)), markHash, "the mark untouched");
        assertEq(_spentOf(g), funded, "grantSpent: what was funded");
        assertLe(_spentOf(g), budget, "within the budget");
        assertEq(sponsorBefore - usdc.balanceOf(sponsor), funded, "the sponsor paid exactly what was funded");
    }

    /// @dev A first use of `g` of 1..=3 tasks (as `shape` says) sharing `first`,
    /// one of them referenced by the digest: that one is the mark. Returns its hash.
    function _markedFirstUse(ITaskEscrow.Grant memory g, uint128 first, uint8 shape)
        internal
        returns (bytes32)
    {
        // `n` tasks (each of at least one unit), the mark at position `m`.
        uint256 n = bound(shape, 1, 3);
        if (n > first) n = first;
        uint256 m = (shape >> 2) % n;
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(n);
        for (uint256 i; i < n; ++i) {
            ps[i].amount = uint128(i + 1 < n ? first / n : first - (n - 1) * (first / n));
        }
        ps[m].ref = _digest(g);
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(g, ps);
        assertEq(ids[m], escrow.grantMarkId(g), "the task referenced by the digest is the mark");
        return escrow.hashTask(ts[m]);
    }

    /// @dev A grant funds a task at any time up to its validUntil, none after.
    function testFuzz_ValidUntil(uint40 validFor, uint40 elapsed) public {
        validFor = uint40(bound(validFor, 0, 400 days));
        elapsed = uint40(bound(elapsed, 0, 800 days));
        ITaskEscrow.Grant memory g = _grant();
        g.validUntil = uint40(block.timestamp) + validFor;
        bytes memory sig = _sign(g);
        vm.warp(block.timestamp + elapsed);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, sig, _grantParamsN(1));
        vm.prank(operator);
        if (block.timestamp > g.validUntil) {
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantExpired.selector, g.validUntil));
            escrow.createWithGrants(bs);
            assertEq(_spent(g), 0, "nothing funded after validUntil");
        } else {
            escrow.createWithGrants(bs);
            assertEq(_spent(g), AMOUNT, "funded up to validUntil");
        }
    }
}
