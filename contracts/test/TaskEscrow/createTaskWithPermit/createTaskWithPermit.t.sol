// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors createTaskWithPermit.tree. Validation shared with createTask
/// is covered in createTask/createTask.t.sol; here the permit handling and that the shared
/// checks still apply.
contract CreateTaskWithPermitTest is EscrowBase {
    uint256 internal permitDeadline;

    function setUp() public override {
        super.setUp();
        // The permit path starts from no allowance.
        vm.prank(funder);
        usdc.approve(address(escrow), 0);
        permitDeadline = block.timestamp + 1 hours;
    }

    function _expectInsufficientAllowance(uint256 allowance, uint256 needed) private {
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), allowance, needed
            )
        );
    }

    function test_RevertWhen_Paused() public {
        // it should revert with EnforcedPause (and leave the permit unused)
        vm.prank(owner);
        escrow.pause();
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
        assertEq(usdc.nonces(funder), 0, "permit not consumed");
    }

    function test_createTaskWithPermit() public {
        // it should consume the permit (nonce + 1)
        // it should spend exactly the permitted allowance
        // it should store the Created task and return taskIdFor(caller, ref)
        // it should emit a {TaskCreated} event
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        uint256 expectedId = escrow.taskIdFor(funder, p.ref);
        uint256 funderBefore = usdc.balanceOf(funder);

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCreated(expectedId, PLAN, 0, p.ref, CAPABILITY, t, SPEC);
        vm.prank(funder);
        uint256 id = escrow.createTaskWithPermit(p, permitDeadline, v, r, s);

        assertEq(id, expectedId, "task id");
        _assertStored(id, t);
        assertEq(usdc.nonces(funder), 1, "permit consumed");
        assertEq(usdc.allowance(funder, address(escrow)), 0, "allowance spent");
        assertEq(usdc.balanceOf(funder), funderBefore - AMOUNT, "funder paid");
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "escrow holds");
    }

    function test_createTaskWithPermit_permitFrontRun() public {
        // it should create the task from the allowance the permit left
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        // Someone watching the mempool submits the permit first.
        vm.prank(stranger);
        usdc.permit(funder, address(escrow), p.amount, permitDeadline, v, r, s);

        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        vm.prank(funder);
        uint256 id = escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
        _assertStored(id, t);
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "escrow holds");
    }

    function test_createTaskWithPermit_badPermitButAllowance() public {
        // it should create the task
        vm.prank(funder);
        usdc.approve(address(escrow), AMOUNT);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        vm.prank(funder);
        uint256 id =
            escrow.createTaskWithPermit(p, permitDeadline, 27, bytes32(uint256(1)), bytes32(uint256(2)));
        _assertStored(id, t);
        assertEq(usdc.nonces(funder), 0, "no permit used");
        assertEq(usdc.balanceOf(address(escrow)), AMOUNT, "escrow holds");
    }

    function test_RevertWhen_PermitInvalidAndNoAllowance() public {
        // it should revert with ERC20InsufficientAllowance
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        // Signed for less than the task amount.
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount - 1, permitDeadline);
        vm.prank(funder);
        _expectInsufficientAllowance(0, p.amount);
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }

    function test_RevertWhen_PermitExpiredAndNoAllowance() public {
        // it should revert with ERC20InsufficientAllowance
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        uint256 expired = block.timestamp - 1;
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, expired);
        vm.prank(funder);
        _expectInsufficientAllowance(0, p.amount);
        escrow.createTaskWithPermit(p, expired, v, r, s);
    }

    function test_RevertWhen_PermitSignedByAnotherAccount() public {
        // it should revert with ERC20InsufficientAllowance
        // The funder signs; the stranger submits: the permit names msg.sender as owner.
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        _mint(stranger, AMOUNT);
        vm.prank(stranger);
        _expectInsufficientAllowance(0, p.amount);
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }

    function test_RevertWhen_ReferenceReused() public {
        // it should revert with TaskEscrowDuplicateReference
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        vm.prank(funder);
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);

        (v, r, s) = _permit(p.amount, permitDeadline);
        vm.prank(funder);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowDuplicateReference.selector, funder, p.ref)
        );
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }

    function test_RevertWhen_AmountZero() public {
        // it should revert with TaskEscrowZeroAmount
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = 0;
        (uint8 v, bytes32 r, bytes32 s) = _permit(0, permitDeadline);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAmount.selector));
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }

    function test_RevertWhen_ExecutorIsFunder() public {
        // it should revert with TaskEscrowSelfDealing
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.executor = funder;
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, permitDeadline);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, funder));
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }

    /*//////////////////////////////////////////////////////////////
                                FUZZ
    //////////////////////////////////////////////////////////////*/

    function testFuzz_createTaskWithPermit_amount(uint128 amount, uint256 deadlineOffset) public {
        // it should consume the permit (nonce + 1)
        // it should spend exactly the permitted allowance
        amount = uint128(bound(amount, 1, type(uint128).max));
        deadlineOffset = bound(deadlineOffset, 0, 365 days);
        uint256 deadline_ = block.timestamp + deadlineOffset;
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        (uint8 v, bytes32 r, bytes32 s) = _permit(amount, deadline_);
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        uint256 before = usdc.balanceOf(funder);

        vm.prank(funder);
        uint256 id = escrow.createTaskWithPermit(p, deadline_, v, r, s);

        _assertStored(id, t);
        assertEq(usdc.nonces(funder), 1, "permit consumed");
        assertEq(usdc.allowance(funder, address(escrow)), 0, "allowance spent");
        assertEq(usdc.balanceOf(funder), before - amount, "funder paid");
        assertEq(usdc.balanceOf(address(escrow)), amount, "escrow holds");
    }

    function testFuzz_createTaskWithPermit_shortPermit(uint128 amount, uint128 signed) public {
        // it should revert with ERC20InsufficientAllowance
        amount = uint128(bound(amount, 2, type(uint128).max));
        signed = uint128(bound(signed, 1, amount - 1));
        _mint(funder, amount);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        (uint8 v, bytes32 r, bytes32 s) = _permit(signed, permitDeadline);
        vm.prank(funder);
        _expectInsufficientAllowance(0, amount);
        escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
    }
}
