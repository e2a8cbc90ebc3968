// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "../../utils/Vm.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors approvePayments.tree: the client pays several delivered
/// tasks in one call; any item that approvePayment would refuse reverts all.
contract ApprovePaymentsTest is EscrowBase {
    function _delivered(uint256 n) internal returns (uint256[] memory ids, ITaskEscrow.Task[] memory ts) {
        ids = new uint256[](n);
        ts = new ITaskEscrow.Task[](n);
        for (uint256 i; i < n; ++i) {
            ITaskEscrow.CreateParams memory p = _params(_nextRef());
            p.executor = i % 2 == 0 ? executor : executor2;
            (ids[i], ts[i]) = _create(p);
            ts[i] = _deliver(ids[i], ts[i]);
        }
    }

    function test_RevertWhen_LengthsDiffer() public {
        // it should revert with TaskEscrowLengthMismatch
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(2);
        ITaskEscrow.Task[] memory one = new ITaskEscrow.Task[](1);
        one[0] = ts[0];
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowLengthMismatch.selector, 2, 1));
        escrow.approvePayments(ids, one, _ratings(ids.length));
    }

    function test_RevertWhen_RatingsLengthDiffers() public {
        // it should revert with TaskEscrowLengthMismatch (the ids' length, the ratings')
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(2);
        uint256[3] memory lengths = [uint256(0), 1, 3];
        for (uint256 i; i < lengths.length; ++i) {
            vm.prank(client);
            vm.expectRevert(
                abi.encodeWithSelector(ITaskEscrow.TaskEscrowLengthMismatch.selector, 2, lengths[i])
            );
            escrow.approvePayments(ids, ts, _ratings(lengths[i]));
        }
        // One per id: the batch goes through.
        vm.prank(client);
        escrow.approvePayments(ids, ts, _ratings(2));
        _assertStored(ids[1], _settled(ts[1], ITaskEscrow.Status.Paid, BPS));
    }

    function test_RevertWhen_BatchEmptyOrTooLong() public {
        // it should revert with TaskEscrowBatchSize
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, 0));
        escrow.approvePayments(new uint256[](0), new ITaskEscrow.Task[](0), new uint8[](0));
        uint256 n = escrow.MAX_BATCH() + 1;
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, n));
        escrow.approvePayments(new uint256[](n), new ITaskEscrow.Task[](n), new uint8[](n));
    }

    function test_RevertWhen_CallerNotClientOfEveryTask() public {
        // it should revert with TaskEscrowUnauthorized
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(3);
        address[4] memory others = [funder, executor, arbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectRevertUnauthorized(others[i]);
            escrow.approvePayments(ids, ts, _ratings(ids.length));
        }
    }

    function test_RevertWhen_AnItemIsNotCompleted() public {
        // it should revert with TaskEscrowInvalidStatus, paying nobody
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(3);
        (ids[1], ts[1]) = _create();
        uint256 held = usdc.balanceOf(address(escrow));
        vm.prank(client);
        _expectRevertStatus(ids[1], ITaskEscrow.Status.Created);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
        assertEq(usdc.balanceOf(address(escrow)), held, "nobody paid");
    }

    function test_RevertWhen_AnItemsRatingAboveMax() public {
        // it should revert with TaskEscrowInvalidRating, paying nobody
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(3);
        uint256 held = usdc.balanceOf(address(escrow));
        uint8[] memory rs = _ratings(3);
        rs[1] = 101;
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidRating.selector, 101));
        escrow.approvePayments(ids, ts, rs);
        // The last item too, after the first two were recorded and the first paid.
        rs[1] = RATING;
        rs[2] = type(uint8).max;
        vm.prank(client);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidRating.selector, type(uint8).max));
        escrow.approvePayments(ids, ts, rs);
        assertEq(usdc.balanceOf(address(escrow)), held, "nobody paid");
        for (uint256 i; i < ids.length; ++i) {
            _assertStored(ids[i], ts[i]);
        }
    }

    function test_RevertWhen_AnItemIsForged() public {
        // it should revert with TaskEscrowStaleTask
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(3);
        ts[2] = _stale(ts[2]);
        vm.prank(client);
        _expectRevertStale(ids[2]);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
    }

    function test_RevertWhen_AnItemRepeats() public {
        // it should revert with TaskEscrowStaleTask
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(2);
        ids[1] = ids[0];
        ts[1] = ts[0];
        // The second approval of the same task sees the paid state: stale.
        vm.prank(client);
        _expectRevertStale(ids[0]);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
    }

    function test_approvePayments() public {
        // it should settle each as Paid, as approvePayment would
        // it should pay each executor its task's amount
        // it should emit a {TaskSettled} event per item, in order
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(4);
        uint256 e1 = usdc.balanceOf(executor);
        uint256 e2 = usdc.balanceOf(executor2);
        uint256 held = usdc.balanceOf(address(escrow));
        for (uint256 i; i < ids.length; ++i) {
            _expectSettled(ids[i], ITaskEscrow.Status.Paid, ITaskEscrow.Settlement.Approved, AMOUNT, 0);
        }
        vm.prank(client);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
        for (uint256 i; i < ids.length; ++i) {
            _assertStored(ids[i], _settled(ts[i], ITaskEscrow.Status.Paid, BPS));
        }
        assertEq(usdc.balanceOf(executor) - e1, 2 * AMOUNT, "executor paid for its two");
        assertEq(usdc.balanceOf(executor2) - e2, 2 * AMOUNT, "executor2 paid for its two");
        assertEq(held - usdc.balanceOf(address(escrow)), 4 * AMOUNT, "the escrow paid out exactly");
    }

    function test_approvePayments_carriesEachRating() public {
        // it should carry each item's own rating in its {TaskSettled}
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _delivered(4);
        uint8[] memory rs = new uint8[](4);
        (rs[0], rs[1], rs[2], rs[3]) = (0, 55, 100, 55);
        for (uint256 i; i < ids.length; ++i) {
            vm.expectEmit(address(escrow));
            emit ITaskEscrow.TaskSettled(
                ids[i],
                ITaskEscrow.Status.Paid,
                ITaskEscrow.Settlement.Approved,
                AMOUNT,
                0,
                rs[i],
                uint40(block.timestamp)
            );
        }
        vm.prank(client);
        escrow.approvePayments(ids, ts, rs);
    }

    function test_WhenConsecutiveItemsHaveOneExecutor() public {
        // it should pay that run in one transfer of their sum
        address[5] memory who = [executor, executor, executor2, executor2, executor];
        uint256[] memory ids = new uint256[](5);
        ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](5);
        for (uint256 i; i < 5; ++i) {
            ITaskEscrow.CreateParams memory p = _params(_nextRef());
            p.executor = who[i];
            (ids[i], ts[i]) = _create(p);
            ts[i] = _deliver(ids[i], ts[i]);
        }
        vm.recordLogs();
        vm.prank(client);
        escrow.approvePayments(ids, ts, _ratings(ids.length));
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bytes32 transfer = keccak256("Transfer(address,address,uint256)");
        address[3] memory to = [executor, executor2, executor];
        uint256[3] memory sums = [uint256(2 * AMOUNT), 2 * AMOUNT, AMOUNT];
        uint256 n;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter != address(usdc) || logs[i].topics[0] != transfer) continue;
            assertLe(n + 1, 3, "one transfer per run");
            assertEq(address(uint160(uint256(logs[i].topics[1]))), address(escrow), "from the escrow");
            assertEq(address(uint160(uint256(logs[i].topics[2]))), to[n], "to the run's executor");
            assertEq(abi.decode(logs[i].data, (uint256)), sums[n], "the run's sum");
            ++n;
        }
        assertEq(n, 3, "three runs, three transfers");
    }
}
