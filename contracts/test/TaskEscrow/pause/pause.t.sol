// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors pause.tree.
contract PauseTest is EscrowBase {
    function test_RevertWhen_PauseCallerNotOwner() public {
        // it should revert with OwnableUnauthorizedAccount
        address[3] memory others = [arbiter, funder, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.pause();
        }
    }

    function test_RevertWhen_AlreadyPaused() public {
        // it should revert with EnforcedPause
        _pause();
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.pause();
    }

    function test_pause() public {
        // it should pause the escrow
        // it should make createTask and createTaskWithPermit revert with EnforcedPause
        // it should emit a {Paused} event
        vm.expectEmit(address(escrow));
        emit Pausable.Paused(owner);
        _pause();
        assertTrue(escrow.paused(), "paused");

        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.createTask(p);
        // The pause is checked before the permit is read: any permit fails the same way.
        vm.prank(funder);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.createTaskWithPermit(p, block.timestamp + 1 hours, 27, bytes32(0), bytes32(0));
    }

    /// @dev Pausing stops new tasks only: every transition of an existing task,
    /// withdrawals, refunds and dispute resolution keep working.
    function test_pause_keepsExistingTasksMoving() public {
        // it should keep every transition of existing tasks working (payouts, refunds, declines, disputes,
        // appeals)
        uint256[] memory ids = new uint256[](10);
        ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](10);
        (ids[0], ts[0]) = _create(); // accept, then refund once expired
        (ids[1], ts[1]) = _create(); // cancel
        (ids[2], ts[2]) = _create(); // reassign
        (ids[3], ts[3]) = _accepted(); // complete, approve
        (ids[4], ts[4]) = _completed(); // dispute, rule
        (ids[5], ts[5]) = _completed(); // auto-release
        (ids[6], ts[6]) = _ruled(4000); // appeal, resolve appeal
        (ids[7], ts[7]) = _ruled(4000); // finalize
        (ids[8], ts[8]) = _disputed(); // dispute default
        (ids[9], ts[9]) = _accepted(); // decline
        _pause();

        ts[0] = _accept(ids[0], ts[0]);
        vm.prank(executor);
        escrow.declineTask(ids[9], ts[9], "no");
        vm.prank(client);
        escrow.cancelTask(ids[1], ts[1]);
        vm.prank(client);
        escrow.reassignTask(ids[2], ts[2], executor2, uint40(block.timestamp + 1 days), CAPABILITY);
        ts[3] = _complete(ids[3], ts[3]);
        vm.prank(client);
        escrow.approvePayment(ids[3], ts[3], RATING);
        ts[4] = _dispute(ids[4], ts[4]);
        _rule(ids[4], ts[4], 5000);
        ts[6] = _appeal(ids[6], ts[6], executor);
        _resolveAppeal(ids[6], ts[6], 9000);

        vm.warp(block.timestamp + 3 days + 1);
        escrow.releasePayment(ids[5], ts[5]);
        escrow.finalizeRuling(ids[7], ts[7]);
        escrow.claimDisputeDefault(ids[8], ts[8]);
        escrow.refundExpired(ids[0], ts[0]);
        assertTrue(escrow.paused(), "still paused");
    }
}
