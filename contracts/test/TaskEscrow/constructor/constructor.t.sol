// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {TaskEscrow} from "../../../src/TaskEscrow.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors constructor.tree.
contract ConstructorTest is EscrowBase {
    function _deployExpectingRevert(
        address token_,
        address owner_,
        address arbiter_,
        address appealArbiter_,
        uint32 disputeWindow_,
        uint32 appealWindow_,
        bytes memory err
    ) private {
        vm.expectRevert(err);
        new TaskEscrow(
            token_,
            address(registry),
            owner_,
            arbiter_,
            appealArbiter_,
            disputeWindow_,
            appealWindow_,
            APPEAL_RULING_WINDOW
        );
    }

    function test_RevertWhen_TokenZero() public {
        // it should revert with TaskEscrowZeroAddress
        _deployExpectingRevert(
            address(0),
            owner,
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector)
        );
    }

    function test_RevertWhen_OwnerZero() public {
        // it should revert with OwnableInvalidOwner
        _deployExpectingRevert(
            address(usdc),
            address(0),
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            abi.encodeWithSelector(Ownable.OwnableInvalidOwner.selector, address(0))
        );
    }

    function test_RevertWhen_ArbiterZero() public {
        // it should revert with TaskEscrowZeroAddress
        _deployExpectingRevert(
            address(usdc),
            owner,
            address(0),
            appealArbiter,
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector)
        );
    }

    function test_RevertWhen_AppealArbiterZero() public {
        // it should revert with TaskEscrowZeroAddress
        _deployExpectingRevert(
            address(usdc),
            owner,
            arbiter,
            address(0),
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector)
        );
    }

    function test_RevertWhen_DisputeWindowOutOfRange() public {
        // it should revert with TaskEscrowInvalidWindow
        _deployExpectingRevert(
            address(usdc),
            owner,
            arbiter,
            appealArbiter,
            MIN_WINDOW - 1,
            APPEAL_WINDOW,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, MIN_WINDOW - 1)
        );
        _deployExpectingRevert(
            address(usdc),
            owner,
            arbiter,
            appealArbiter,
            MAX_WINDOW + 1,
            APPEAL_WINDOW,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, MAX_WINDOW + 1)
        );
    }

    function test_RevertWhen_AppealWindowOutOfRange() public {
        // it should revert with TaskEscrowInvalidWindow
        _deployExpectingRevert(
            address(usdc),
            owner,
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            MAX_WINDOW + 1,
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, MAX_WINDOW + 1)
        );
    }

    function test_RevertWhen_RegistryZero() public {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
        new TaskEscrow(
            address(usdc),
            address(0),
            owner,
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            APPEAL_RULING_WINDOW
        );
    }

    function test_RevertWhen_AppealRulingWindowOutOfRange() public {
        uint32[2] memory bad = [MIN_WINDOW - 1, MAX_WINDOW + 1];
        for (uint256 i; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, bad[i]));
            new TaskEscrow(
                address(usdc),
                address(registry),
                owner,
                arbiter,
                appealArbiter,
                DISPUTE_WINDOW,
                APPEAL_WINDOW,
                bad[i]
            );
        }
    }

    function testFuzz_constructor_appealRulingWindow(uint32 w) public {
        w = uint32(bound(w, MIN_WINDOW, MAX_WINDOW));
        TaskEscrow e = new TaskEscrow(
            address(usdc), address(registry), owner, arbiter, appealArbiter, DISPUTE_WINDOW, APPEAL_WINDOW, w
        );
        assertEq(e.appealRulingWindow(), w, "appeal ruling window");
        assertEq(e.registry(), address(registry), "registry");
    }

    function test_constructor() public {
        // it should set token, owner, arbiter, appeal arbiter and both windows
        // it should leave nothing pending and the escrow unpaused
        // it should emit {OwnershipTransferred}, {WindowsUpdated}, {ArbiterChanged} and
        // {AppealArbiterChanged}
        vm.expectEmit();
        emit Ownable.OwnershipTransferred(address(0), owner);
        vm.expectEmit();
        emit ITaskEscrow.WindowsUpdated(DISPUTE_WINDOW, 0, APPEAL_RULING_WINDOW);
        vm.expectEmit();
        emit ITaskEscrow.ArbiterChanged(address(0), arbiter);
        vm.expectEmit();
        emit ITaskEscrow.AppealArbiterChanged(address(0), appealArbiter);
        TaskEscrow e = new TaskEscrow(
            address(usdc),
            address(registry),
            owner,
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            0,
            APPEAL_RULING_WINDOW
        );

        assertEq(e.token(), address(usdc), "token");
        assertEq(e.owner(), owner, "owner");
        assertEq(e.pendingOwner(), address(0), "pending owner");
        assertEq(e.arbiter(), arbiter, "arbiter");
        assertEq(e.appealArbiter(), appealArbiter, "appeal arbiter");
        assertEq(e.pendingArbiter(), address(0), "pending arbiter");
        assertEq(e.pendingAppealArbiter(), address(0), "pending appeal arbiter");
        assertEq(e.disputeWindow(), DISPUTE_WINDOW, "dispute window");
        assertEq(e.appealWindow(), 0, "appeal window");
        assertEq(e.appealRulingWindow(), APPEAL_RULING_WINDOW, "appeal ruling window");
        assertEq(e.registry(), address(registry), "registry");
        assertFalse(e.paused(), "not paused");
    }

    function testFuzz_constructor_windows(uint32 disputeWindow_, uint32 appealWindow_) public {
        // it should set token, owner, arbiter, appeal arbiter and both windows
        disputeWindow_ = uint32(bound(disputeWindow_, MIN_WINDOW, MAX_WINDOW));
        appealWindow_ = uint32(bound(appealWindow_, 0, MAX_WINDOW));
        TaskEscrow e = new TaskEscrow(
            address(usdc),
            address(registry),
            owner,
            arbiter,
            appealArbiter,
            disputeWindow_,
            appealWindow_,
            APPEAL_RULING_WINDOW
        );
        assertEq(e.disputeWindow(), disputeWindow_, "dispute window");
        assertEq(e.appealWindow(), appealWindow_, "appeal window");
    }
}
