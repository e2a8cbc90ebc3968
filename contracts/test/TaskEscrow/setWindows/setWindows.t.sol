// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors setWindows.tree.
contract SetWindowsTest is EscrowBase {
    function _expectInvalidWindow(uint32 window) private {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidWindow.selector, window));
    }

    function test_RevertWhen_CallerNotOwner() public {
        // it should revert with OwnableUnauthorizedAccount
        address[3] memory others = [arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.setWindows(1 days, 1 days, APPEAL_RULING_WINDOW);
        }
    }

    function test_RevertWhen_DisputeWindowTooShort() public {
        // it should revert with TaskEscrowInvalidWindow(disputeWindow)
        vm.prank(owner);
        _expectInvalidWindow(MIN_WINDOW - 1);
        escrow.setWindows(MIN_WINDOW - 1, APPEAL_WINDOW, APPEAL_RULING_WINDOW);
    }

    function test_RevertWhen_DisputeWindowTooLong() public {
        // it should revert with TaskEscrowInvalidWindow(disputeWindow)
        vm.prank(owner);
        _expectInvalidWindow(MAX_WINDOW + 1);
        escrow.setWindows(MAX_WINDOW + 1, APPEAL_WINDOW, APPEAL_RULING_WINDOW);
    }

    function test_RevertWhen_AppealWindowTooLong() public {
        // it should revert with TaskEscrowInvalidWindow(appealWindow)
        vm.prank(owner);
        _expectInvalidWindow(MAX_WINDOW + 1);
        escrow.setWindows(DISPUTE_WINDOW, MAX_WINDOW + 1, APPEAL_RULING_WINDOW);
    }

    function test_setWindows() public {
        // it should set disputeWindow and appealWindow for tasks created from now on
        // it should emit a {WindowsUpdated} event
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.WindowsUpdated(5 days, 1 hours, APPEAL_RULING_WINDOW);
        vm.prank(owner);
        escrow.setWindows(5 days, 1 hours, APPEAL_RULING_WINDOW);
        assertEq(escrow.disputeWindow(), 5 days, "dispute window");
        assertEq(escrow.appealWindow(), 1 hours, "appeal window");
    }

    function test_setWindows_bounds() public {
        // it should set disputeWindow and appealWindow for tasks created from now on
        _setWindows(MIN_WINDOW, 0);
        assertEq(escrow.disputeWindow(), MIN_WINDOW, "min dispute window");
        assertEq(escrow.appealWindow(), 0, "zero appeal window");
        _setWindows(MAX_WINDOW, MAX_WINDOW);
        assertEq(escrow.disputeWindow(), MAX_WINDOW, "max dispute window");
        assertEq(escrow.appealWindow(), MAX_WINDOW, "max appeal window");
    }

    /// @dev Windows are snapshotted at creation: a change never moves an open task's clock.
    function test_setWindows_leavesExistingTasksAlone() public {
        // it should leave the windows snapshotted into existing tasks alone
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        _setWindows(MIN_WINDOW, 0);
        vm.warp(block.timestamp + MIN_WINDOW + 1);
        // The old task still has its 3-day dispute window and a 2-day appeal window.
        _expectRevertTooEarly(uint256(t.updatedAt) + DISPUTE_WINDOW + 1);
        escrow.claimDisputeDefault(id, t);
        t = _rule(id, t, 5000);
        assertEq(t.appealWindow, APPEAL_WINDOW, "appeal window kept");
    }

    function testFuzz_setWindows_acceptsOnlyInRange(uint32 disputeWindow_, uint32 appealWindow_) public {
        bool valid =
            disputeWindow_ >= MIN_WINDOW && disputeWindow_ <= MAX_WINDOW && appealWindow_ <= MAX_WINDOW;
        vm.prank(owner);
        if (!valid) {
            _expectInvalidWindow(
                disputeWindow_ < MIN_WINDOW || disputeWindow_ > MAX_WINDOW ? disputeWindow_ : appealWindow_
            );
        }
        escrow.setWindows(disputeWindow_, appealWindow_, APPEAL_RULING_WINDOW);
        if (valid) {
            assertEq(escrow.disputeWindow(), disputeWindow_, "dispute window");
            assertEq(escrow.appealWindow(), appealWindow_, "appeal window");
            (, ITaskEscrow.Task memory t) = _create();
            assertEq(t.disputeWindow, disputeWindow_, "snapshotted dispute window");
            assertEq(t.appealWindow, appealWindow_, "snapshotted appeal window");
        }
    }

    function testFuzz_setWindows_valid(uint32 disputeWindow_, uint32 appealWindow_) public {
        // it should set disputeWindow and appealWindow for tasks created from now on
        // it should emit a {WindowsUpdated} event
        disputeWindow_ = uint32(bound(disputeWindow_, MIN_WINDOW, MAX_WINDOW));
        appealWindow_ = uint32(bound(appealWindow_, 0, MAX_WINDOW));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.WindowsUpdated(disputeWindow_, appealWindow_, APPEAL_RULING_WINDOW);
        _setWindows(disputeWindow_, appealWindow_);
        assertEq(escrow.disputeWindow(), disputeWindow_, "dispute window");
        assertEq(escrow.appealWindow(), appealWindow_, "appeal window");
    }
}
