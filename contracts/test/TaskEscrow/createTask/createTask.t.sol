// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors createTask.tree.
contract CreateTaskTest is EscrowBase {
    function _createExpectingRevert(ITaskEscrow.CreateParams memory p, bytes memory err) private {
        vm.prank(funder);
        vm.expectRevert(err);
        escrow.createTask(p);
    }

    function test_RevertWhen_Paused() public {
        // it should revert with EnforcedPause
        vm.prank(owner);
        escrow.pause();
        _createExpectingRevert(_params(_nextRef()), abi.encodeWithSelector(Pausable.EnforcedPause.selector));
    }

    function test_RevertWhen_AmountZero() public {
        // it should revert with TaskEscrowZeroAmount
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = 0;
        _createExpectingRevert(p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAmount.selector));
    }

    function test_RevertWhen_ClientZero() public {
        // it should revert with TaskEscrowZeroAddress
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.client = address(0);
        _createExpectingRevert(p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
    }

    function test_RevertWhen_ExecutorZero() public {
        // it should revert with TaskEscrowZeroAddress
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.executor = address(0);
        _createExpectingRevert(p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
    }

    function test_RevertWhen_ExecutorIsClient() public {
        // it should revert with TaskEscrowSelfDealing
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.executor = client;
        _createExpectingRevert(p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, client));
    }

    function test_RevertWhen_ExecutorIsFunder() public {
        // it should revert with TaskEscrowSelfDealing
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.executor = funder;
        _createExpectingRevert(p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, funder));
    }

    function test_RevertWhen_DeadlineIsNow() public {
        // it should revert with TaskEscrowInvalidDeadline
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp);
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, p.deadline)
        );
    }

    function test_RevertWhen_DeadlineInThePast() public {
        // it should revert with TaskEscrowInvalidDeadline
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp - 1);
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, p.deadline)
        );
    }

    function test_RevertWhen_DeadlineBeyondHorizon() public {
        // it should revert with TaskEscrowInvalidDeadline
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp + HORIZON + 1);
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, p.deadline)
        );
    }

    function test_createTask_deadlineBounds() public {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp + 1);
        _create(p);
        p = _params(_nextRef());
        p.deadline = uint40(block.timestamp + HORIZON);
        _create(p);
    }

    function test_RevertWhen_ReviewWindowTooShort() public {
        // it should revert with TaskEscrowInvalidWindow
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = MIN_WINDOW - 1;
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, p.reviewWindow)
        );
    }

    function test_RevertWhen_ReviewWindowTooLong() public {
        // it should revert with TaskEscrowInvalidWindow
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = MAX_WINDOW + 1;
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, p.reviewWindow)
        );
    }

    function test_createTask_reviewWindowBounds() public {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = MIN_WINDOW;
        _create(p);
        p = _params(_nextRef());
        p.reviewWindow = MAX_WINDOW;
        _create(p);
    }

    function test_RevertWhen_ReferenceReused() public {
        // it should revert with TaskEscrowDuplicateReference
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        _create(p);
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowDuplicateReference.selector, funder, p.ref)
        );
    }

    function test_RevertWhen_ReferenceReusedAfterSettlement() public {
        // it should revert even once that task is settled
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        vm.prank(client);
        escrow.cancelTask(id, t);
        // Different parameters, same (funder, ref): still a duplicate.
        p.amount = AMOUNT * 2;
        p.executor = executor2;
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowDuplicateReference.selector, funder, p.ref)
        );
    }

    function test_RevertWhen_AllowanceMissing() public {
        // it should revert with ERC20InsufficientAllowance
        vm.prank(funder);
        usdc.approve(address(escrow), AMOUNT - 1);
        _createExpectingRevert(
            _params(_nextRef()),
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), AMOUNT - 1, AMOUNT
            )
        );
    }

    function test_RevertWhen_BalanceMissing() public {
        // it should revert with ERC20InsufficientBalance
        vm.prank(stranger);
        usdc.approve(address(escrow), type(uint256).max);
        _mint(stranger, AMOUNT - 1);
        vm.prank(stranger);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientBalance.selector, stranger, AMOUNT - 1, AMOUNT
            )
        );
        escrow.createTask(_params(_nextRef()));
    }

    function test_createTask() public {
        // it should return taskIdFor(caller, ref)
        // it should record the caller as funder (the client may be the funder)
        // it should store the hash of the Created task with specHash = keccak256(specURI)
        // it should move the amount from the funder to the escrow
        // it should emit a {TaskCreated} event with the full task
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.parentId = 42;
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        uint256 expectedId = escrow.taskIdFor(funder, p.ref);
        uint256 funderBefore = usdc.balanceOf(funder);

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCreated(expectedId, PLAN, 42, p.ref, CAPABILITY, t, SPEC);
        vm.expectEmit(address(usdc));
        emit IERC20.Transfer(funder, address(escrow), AMOUNT);
        vm.prank(funder);
        uint256 id = escrow.createTask(p);

        assertEq(id, expectedId, "task id");
        _assertStored(id, t);
        assertEq(t.specHash, keccak256(bytes(SPEC)), "spec hash");
        assertEq(usdc.balanceOf(funder), funderBefore - AMOUNT, "funder paid");
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "escrow holds");
    }

    function test_createTask_clientMayBeFunder() public {
        // it should record the caller as funder (the client may be the funder)
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.client = funder;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        assertEq(t.client, funder, "client");
        _assertStored(id, t);
    }

    function test_createTask_snapshotsWindows() public {
        // it should snapshot the current dispute and appeal windows
        (uint256 oldId, ITaskEscrow.Task memory oldTask) = _create();
        _setWindows(MIN_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        assertEq(t.disputeWindow, MIN_WINDOW, "new dispute window");
        assertEq(t.appealWindow, 0, "new appeal window");
        _assertStored(id, t);
        assertEq(oldTask.disputeWindow, DISPUTE_WINDOW, "old dispute window");
        assertEq(oldTask.appealWindow, APPEAL_WINDOW, "old appeal window");
        _assertStored(oldId, oldTask);
    }

    function test_createTask_sameRefOtherFunder() public {
        // it should let another funder use the same reference
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint256 id,) = _create(p);
        _mint(stranger, AMOUNT);
        vm.prank(stranger);
        usdc.approve(address(escrow), AMOUNT);
        ITaskEscrow.Task memory t = _expectedCreated(p, stranger);
        vm.prank(stranger);
        uint256 id2 = escrow.createTask(p);
        assertNotEq(id, id2, "distinct ids");
        _assertStored(id2, t);
        assertEq(usdc.balanceOf(address(escrow)), 2 * uint256(AMOUNT), "escrow holds both");
    }

    /*//////////////////////////////////////////////////////////////
                                FUZZ
    //////////////////////////////////////////////////////////////*/

    function testFuzz_createTask_amount(uint128 amount) public {
        // it should move the amount from the funder to the escrow
        amount = uint128(bound(amount, 1, type(uint128).max));
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        uint256 before = usdc.balanceOf(funder);
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        _assertStored(id, t);
        assertEq(usdc.balanceOf(funder), before - amount, "funder paid");
        assertEq(usdc.balanceOf(address(escrow)), amount, "escrow holds");
    }

    function testFuzz_createTask_duplicateReference(bytes32 ref) public {
        // it should revert with TaskEscrowDuplicateReference
        ITaskEscrow.CreateParams memory p = _params(ref);
        (uint256 id,) = _create(p);
        assertEq(id, escrow.taskIdFor(funder, ref), "id");
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowDuplicateReference.selector, funder, ref)
        );
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "funded once");
    }

    function testFuzz_createTask_sameRefAcrossFunders(bytes32 ref, uint256 otherKey) public {
        // it should let another funder use the same reference
        otherKey = bound(otherKey, 1, 2 ** 128);
        address other = vm.addr(otherKey);
        vm.assume(other != funder && other != executor && other != client);
        ITaskEscrow.CreateParams memory p = _params(ref);
        (uint256 id,) = _create(p);
        _mint(other, AMOUNT);
        vm.prank(other);
        usdc.approve(address(escrow), AMOUNT);
        ITaskEscrow.Task memory t = _expectedCreated(p, other);
        vm.prank(other);
        uint256 otherId = escrow.createTask(p);
        assertEq(otherId, escrow.taskIdFor(other, ref), "other id");
        assertNotEq(id, otherId, "distinct ids");
        _assertStored(otherId, t);
        assertEq(usdc.balanceOf(address(escrow)), 2 * uint256(AMOUNT), "both funded");
    }

    function testFuzz_createTask_validDeadline(uint40 offset) public {
        offset = uint40(bound(offset, 1, HORIZON));
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = uint40(block.timestamp) + offset;
        _create(p);
    }

    function testFuzz_createTask_invalidDeadline(uint40 deadline) public {
        // it should revert with TaskEscrowInvalidDeadline
        vm.assume(deadline <= block.timestamp || deadline > block.timestamp + HORIZON);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.deadline = deadline;
        _createExpectingRevert(
            p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadline.selector, deadline)
        );
    }

    function testFuzz_createTask_reviewWindow(uint32 reviewWindow) public {
        // it should revert with TaskEscrowInvalidWindow
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.reviewWindow = reviewWindow;
        if (reviewWindow < MIN_WINDOW || reviewWindow > MAX_WINDOW) {
            _createExpectingRevert(
                p, abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, reviewWindow)
            );
        } else {
            _create(p);
        }
    }
}
