// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors createTasksWithPermit.tree: one permit for the batch's sum.
contract CreateTasksWithPermitTest is EscrowBase {
    function setUp() public override {
        super.setUp();
        vm.prank(funder);
        usdc.approve(address(escrow), 0);
    }

    function _two() internal returns (ITaskEscrow.CreateParams[] memory ps, uint256 sum) {
        ps = new ITaskEscrow.CreateParams[](2);
        ps[0] = _params(_nextRef());
        ps[1] = _params(_nextRef());
        ps[1].executor = executor2;
        sum = uint256(ps[0].amount) + ps[1].amount;
    }

    function test_createTasksWithPermit() public {
        // it should consume one permit and spend the allowance exactly
        // it should create every task and hold the sum
        (ITaskEscrow.CreateParams[] memory ps, uint256 sum) = _two();
        uint256 deadline = block.timestamp + 1 hours;
        (uint8 v, bytes32 r, bytes32 s) = _permit(sum, deadline);
        vm.prank(funder);
        uint256[] memory ids = escrow.createTasksWithPermit(ps, deadline, v, r, s);
        assertEq(usdc.nonces(funder), 1, "one permit consumed");
        assertEq(usdc.allowance(funder, address(escrow)), 0, "allowance spent exactly");
        assertEq(usdc.balanceOf(address(escrow)), sum);
        _assertStored(ids[0], _expectedCreated(ps[0], funder));
        _assertStored(ids[1], _expectedCreated(ps[1], funder));
    }

    function test_RevertWhen_PermitForLessThanTheSum() public {
        // it should revert with ERC20InsufficientAllowance
        (ITaskEscrow.CreateParams[] memory ps, uint256 sum) = _two();
        uint256 deadline = block.timestamp + 1 hours;
        // Signed for one task only: the permit fails, and no allowance covers the sum.
        (uint8 v, bytes32 r, bytes32 s) = _permit(ps[0].amount, deadline);
        vm.prank(funder);
        vm.expectRevert(
            abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), 0, sum)
        );
        escrow.createTasksWithPermit(ps, deadline, v, r, s);
    }

    function test_createTasksWithPermit_frontRunPermitStillCreates() public {
        // it should create the batch with the allowance the permit set
        (ITaskEscrow.CreateParams[] memory ps, uint256 sum) = _two();
        uint256 deadline = block.timestamp + 1 hours;
        (uint8 v, bytes32 r, bytes32 s) = _permit(sum, deadline);
        // Someone submits the permit first: creation goes on with the allowance it set.
        usdc.permit(funder, address(escrow), sum, deadline, v, r, s);
        vm.prank(funder);
        escrow.createTasksWithPermit(ps, deadline, v, r, s);
        assertEq(usdc.balanceOf(address(escrow)), sum);
    }

    function test_RevertWhen_BatchEmpty() public {
        // it should revert with TaskEscrowBatchSize
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](0);
        (uint8 v, bytes32 r, bytes32 s) = _permit(0, block.timestamp + 1 hours);
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, 0));
        escrow.createTasksWithPermit(ps, block.timestamp + 1 hours, v, r, s);
    }
}
