// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {FeeOnTransferToken} from "../../mocks/FeeOnTransferToken.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice An escrow in a fee-on-transfer token refuses to create a task it
/// would be underfunded for: TaskEscrowTransferMismatch(expected, received).
contract FeeOnTransferTokenTest is EscrowBase {
    uint16 internal constant FEE_BPS = 100; // 1%

    FeeOnTransferToken internal token;

    function _deploy(uint16 feeBps) private {
        token = new FeeOnTransferToken(feeBps);
        escrow = _deployEscrow(address(token));
        token.mint(funder, type(uint128).max);
        vm.prank(funder);
        token.approve(address(escrow), type(uint256).max);
    }

    function setUp() public override {
        super.setUp();
        _deploy(FEE_BPS);
    }

    function _expectMismatch(uint256 expected, uint256 received) private {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTransferMismatch.selector, expected, received)
        );
    }

    function test_RevertWhen_TokenTakesAFee() public {
        // it should revert with TaskEscrowTransferMismatch (see tokens/feeOnTransfer.t.sol)
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        uint256 funderBefore = token.balanceOf(funder);
        vm.prank(funder);
        _expectMismatch(AMOUNT, AMOUNT - AMOUNT / 100);
        escrow.createTask(p);
        assertEq(escrow.taskHash(escrow.taskIdFor(funder, p.ref)), bytes32(0), "no task");
        assertEq(token.balanceOf(funder), funderBefore, "funder not charged");
    }

    function test_RevertWhen_TokenTakesAFee_permitPath() public {
        // No permit on this token: the failed permit is tolerated, the allowance pays, the fee is caught.
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.prank(funder);
        _expectMismatch(AMOUNT, AMOUNT - AMOUNT / 100);
        escrow.createTaskWithPermit(p, block.timestamp, 27, bytes32(0), bytes32(0));
    }

    function test_createTask_feeRoundsToZero() public {
        // 99 units at 1% is a fee of 0: the exact amount arrives.
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = 99;
        (uint256 id, ITaskEscrow.Task memory t) = _create(p);
        _assertStored(id, t);
        assertEq(token.balanceOf(address(escrow)), 99, "escrow holds");
    }

    function test_createTask_noFee() public {
        _deploy(0);
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        _assertStored(id, t);
        assertEq(token.balanceOf(address(escrow)), AMOUNT, "escrow holds");
    }

    function testFuzz_createTask_feeOnTransfer(uint128 amount, uint16 feeBps) public {
        // it should revert with TaskEscrowTransferMismatch (see tokens/feeOnTransfer.t.sol)
        amount = uint128(bound(amount, 1, type(uint128).max));
        feeBps = uint16(bound(feeBps, 1, 10_000));
        _deploy(feeBps);
        uint256 fee = (uint256(amount) * feeBps) / 10_000;
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        if (fee == 0) {
            _create(p);
            assertEq(token.balanceOf(address(escrow)), amount, "exact amount arrived");
        } else {
            vm.prank(funder);
            _expectMismatch(amount, amount - fee);
            escrow.createTask(p);
        }
    }
}
