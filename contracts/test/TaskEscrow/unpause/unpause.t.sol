// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors unpause.tree.
contract UnpauseTest is EscrowBase {
    function test_RevertWhen_UnpauseCallerNotOwner() public {
        // it should revert with OwnableUnauthorizedAccount
        _pause();
        address[3] memory others = [arbiter, funder, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.unpause();
        }
    }

    function test_RevertWhen_NotPaused() public {
        // it should revert with ExpectedPause
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(Pausable.ExpectedPause.selector));
        escrow.unpause();
    }

    function test_unpause() public {
        // it should unpause the escrow
        // it should allow new tasks again
        // it should emit an {Unpaused} event
        _pause();
        vm.expectEmit(address(escrow));
        emit Pausable.Unpaused(owner);
        vm.prank(owner);
        escrow.unpause();
        assertFalse(escrow.paused(), "unpaused");
        _create();
    }
}
