// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {RevertingPermitToken} from "../../mocks/RevertingPermitToken.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice createTaskWithPermit on a token whose permit reverts: the revert is
/// swallowed and the allowance decides.
contract RevertingPermitTokenTest is EscrowBase {
    RevertingPermitToken internal token;

    function setUp() public override {
        super.setUp();
        token = new RevertingPermitToken();
        escrow = _deployEscrow(address(token));
        token.mint(funder, 1_000_000_000_000);
    }

    function _createWithPermit(ITaskEscrow.CreateParams memory p) private returns (uint256) {
        vm.prank(funder);
        return escrow.createTaskWithPermit(
            p, block.timestamp + 1 hours, 27, bytes32(uint256(1)), bytes32(uint256(2))
        );
    }

    function test_permit_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RevertingPermitToken.PermitDisabled.selector));
        token.permit(funder, address(escrow), AMOUNT, block.timestamp, 27, bytes32(0), bytes32(0));
    }

    function test_createTaskWithPermit_allowanceSetBeforehand() public {
        // it should fall back to the allowance (see tokens/revertingPermit.t.sol)
        vm.prank(funder);
        token.approve(address(escrow), AMOUNT);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCreated(escrow.taskIdFor(funder, p.ref), PLAN, 0, p.ref, CAPABILITY, t, SPEC);
        uint256 id = _createWithPermit(p);
        _assertStored(id, t);
        assertEq(token.balanceOf(address(escrow)), AMOUNT, "escrow holds");
        assertEq(token.allowance(funder, address(escrow)), 0, "allowance spent");
    }

    function test_RevertWhen_NoAllowance() public {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), 0, AMOUNT
            )
        );
        _createWithPermit(p);
    }

    function test_RevertWhen_AllowanceShort() public {
        vm.prank(funder);
        token.approve(address(escrow), AMOUNT - 1);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), AMOUNT - 1, AMOUNT
            )
        );
        _createWithPermit(p);
    }

    /// @dev A token with no permit function at all behaves the same.
    function test_createTaskWithPermit_tokenWithoutPermit() public {
        // it should fall back to the allowance (see tokens/revertingPermit.t.sol)
        PlainToken plain = new PlainToken();
        escrow = _deployEscrow(address(plain));
        plain.mint(funder, AMOUNT);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), 0, AMOUNT
            )
        );
        _createWithPermit(p);
        vm.prank(funder);
        plain.approve(address(escrow), AMOUNT);
        uint256 id = _createWithPermit(p);
        _assertStored(id, _expectedCreated(p, funder));
    }

    function testFuzz_createTaskWithPermit_allowanceDecides(uint128 amount, uint256 allowance) public {
        amount = uint128(bound(amount, 1, 1_000_000_000_000));
        allowance = bound(allowance, 0, 2 * uint256(amount));
        vm.prank(funder);
        token.approve(address(escrow), allowance);
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        p.amount = amount;
        if (allowance < amount) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), allowance, amount
                )
            );
            _createWithPermit(p);
        } else {
            uint256 id = _createWithPermit(p);
            _assertStored(id, _expectedCreated(p, funder));
            assertEq(token.allowance(funder, address(escrow)), allowance - amount, "allowance spent");
        }
    }
}

contract PlainToken is ERC20 {
    constructor() ERC20("Plain", "PLN") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
