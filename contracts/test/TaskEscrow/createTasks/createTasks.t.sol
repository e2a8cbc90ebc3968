// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {Vm} from "../../utils/Vm.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors createTasks.tree. Each item passes the same checks as
/// createTask (createTask/createTask.t.sol); here what the batch adds: its size, one
/// token transfer for the sum, and all-or-nothing on a reused reference.
contract CreateTasksTest is EscrowBase {
    function _batch(uint256 n) internal returns (ITaskEscrow.CreateParams[] memory ps) {
        ps = new ITaskEscrow.CreateParams[](n);
        for (uint256 i; i < n; ++i) {
            ps[i] = _params(_nextRef());
            ps[i].amount = AMOUNT + uint128(i);
            ps[i].parentId = i;
        }
    }

    function _sum(ITaskEscrow.CreateParams[] memory ps) internal pure returns (uint256 total) {
        for (uint256 i; i < ps.length; ++i) {
            total += ps[i].amount;
        }
    }

    function test_RevertWhen_BatchEmpty() public {
        // it should revert with TaskEscrowBatchSize
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](0);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, 0));
        escrow.createTasks(ps);
    }

    function test_RevertWhen_BatchAboveMax() public {
        // it should revert with TaskEscrowBatchSize
        uint256 max = escrow.MAX_BATCH();
        ITaskEscrow.CreateParams[] memory ps = _batch(max + 1);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, max + 1));
        escrow.createTasks(ps);
    }

    function test_RevertWhen_Paused() public {
        // it should revert with EnforcedPause
        vm.prank(owner);
        escrow.pause();
        ITaskEscrow.CreateParams[] memory ps = _batch(2);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.createTasks(ps);
    }

    function test_RevertWhen_ReferenceRepeatedInBatch() public {
        // it should revert with TaskEscrowBatchDuplicate(index, ref), funding nothing
        ITaskEscrow.CreateParams[] memory ps = _batch(3);
        ps[2].ref = ps[0].ref;
        uint256 before = usdc.balanceOf(funder);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 2, ps[0].ref));
        escrow.createTasks(ps);
        assertEq(usdc.balanceOf(funder), before, "nothing funded");
        assertEq(escrow.taskHash(escrow.taskIdFor(funder, ps[0].ref)), bytes32(0), "nothing created");
    }

    function test_RevertWhen_ReferenceUsedBefore() public {
        // it should revert with TaskEscrowBatchDuplicate(index, ref), funding nothing
        ITaskEscrow.CreateParams[] memory ps = _batch(3);
        vm.prank(funder);
        escrow.createTask(ps[1]);
        uint256 before = usdc.balanceOf(funder);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 1, ps[1].ref));
        escrow.createTasks(ps);
        assertEq(usdc.balanceOf(funder), before, "no partial funding");
        assertEq(
            escrow.taskHash(escrow.taskIdFor(funder, ps[0].ref)), bytes32(0), "the first item rolled back"
        );
    }

    function test_RevertWhen_AnItemFailsItsChecks() public {
        // it should revert with TaskEscrowZeroAmount (or whichever error createTask gives)
        ITaskEscrow.CreateParams[] memory ps = _batch(2);
        ps[1].amount = 0;
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAmount.selector));
        escrow.createTasks(ps);
    }

    function test_RevertWhen_AnExecutorDoesNotOffer() public {
        // it should revert with TaskEscrowExecutorNotOffering
        ITaskEscrow.CreateParams[] memory ps = _batch(2);
        ps[1].executor = stranger;
        vm.prank(funder);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowExecutorNotOffering.selector, stranger, CAPABILITY, ps[1].amount
            )
        );
        escrow.createTasks(ps);
    }

    function test_RevertWhen_AllowanceBelowSum() public {
        // it should revert with ERC20InsufficientAllowance
        ITaskEscrow.CreateParams[] memory ps = _batch(3);
        uint256 sum = _sum(ps);
        vm.prank(funder);
        usdc.approve(address(escrow), sum - 1);
        vm.prank(funder);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), sum - 1, sum
            )
        );
        escrow.createTasks(ps);
    }

    function test_createTasks() public {
        // it should store each task as createTask would, in order, ids derived from (funder, ref)
        // it should emit one {TaskCreated} per item, in order
        // it should pull the sum in one token transfer
        ITaskEscrow.CreateParams[] memory ps = _batch(3);
        uint256 sum = _sum(ps);
        uint256 funderBefore = usdc.balanceOf(funder);
        for (uint256 i; i < ps.length; ++i) {
            vm.expectEmit(address(escrow));
            emit ITaskEscrow.TaskCreated(
                escrow.taskIdFor(funder, ps[i].ref),
                PLAN,
                i,
                ps[i].ref,
                CAPABILITY,
                _expectedCreated(ps[i], funder),
                SPEC
            );
        }
        vm.recordLogs();
        vm.prank(funder);
        uint256[] memory ids = escrow.createTasks(ps);

        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 transfers;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(usdc)) ++transfers;
        }
        assertEq(transfers, 1, "one token transfer for the whole batch");
        assertEq(ids.length, 3, "one id per item");
        for (uint256 i; i < ids.length; ++i) {
            assertEq(ids[i], escrow.taskIdFor(funder, ps[i].ref), "ids in order");
            _assertStored(ids[i], _expectedCreated(ps[i], funder));
        }
        assertEq(usdc.balanceOf(funder), funderBefore - sum, "funder paid the sum");
        assertEq(usdc.balanceOf(address(escrow)), sum, "escrow holds the sum");
    }

    function test_createTasks_maxBatch() public {
        // it should leave the escrow holding exactly the sum (fuzzed over 1..=20 items)
        ITaskEscrow.CreateParams[] memory ps = _batch(escrow.MAX_BATCH());
        vm.prank(funder);
        uint256[] memory ids = escrow.createTasks(ps);
        assertEq(ids.length, escrow.MAX_BATCH());
        assertEq(usdc.balanceOf(address(escrow)), _sum(ps));
    }

    function testFuzz_createTasks_holdsExactlyTheSum(uint8 n, uint96 seed) public {
        // it should store each task as createTask would, in order, ids derived from (funder, ref)
        // it should leave the escrow holding exactly the sum (fuzzed over 1..=20 items)
        n = uint8(bound(n, 1, 20));
        ITaskEscrow.CreateParams[] memory ps = _batch(n);
        for (uint256 i; i < n; ++i) {
            ps[i].amount = uint128(bound(uint256(keccak256(abi.encode(seed, i))), PRICE, 1e10));
        }
        uint256 sum = _sum(ps);
        uint256 funderBefore = usdc.balanceOf(funder);
        vm.prank(funder);
        uint256[] memory ids = escrow.createTasks(ps);
        assertEq(usdc.balanceOf(address(escrow)), sum, "escrow holds the sum");
        assertEq(funderBefore - usdc.balanceOf(funder), sum, "funder paid the sum");
        for (uint256 i; i < n; ++i) {
            _assertStored(ids[i], _expectedCreated(ps[i], funder));
        }
    }
}
