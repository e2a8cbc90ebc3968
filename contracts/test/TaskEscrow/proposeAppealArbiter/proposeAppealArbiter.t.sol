// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors proposeAppealArbiter.tree.
contract ProposeAppealArbiterTest is EscrowBase {
    address internal candidate;

    function setUp() public override {
        super.setUp();
        candidate = makeAddr("candidate");
    }

    function test_RevertWhen_ProposeAppealArbiterCallerNotOwner() public {
        // it should revert with OwnableUnauthorizedAccount
        address[3] memory others = [arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.proposeAppealArbiter(candidate);
        }
    }

    function test_RevertWhen_ProposedAppealArbiterZero() public {
        // it should revert with TaskEscrowZeroAddress
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
        escrow.proposeAppealArbiter(address(0));
    }

    function test_proposeAppealArbiter() public {
        // it should set pendingAppealArbiter
        // it should leave the current appeal arbiter in charge until accepted
        // it should emit an {AppealArbiterProposed} event
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.AppealArbiterProposed(appealArbiter, candidate);
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        assertEq(escrow.pendingAppealArbiter(), candidate, "pending");
        assertEq(escrow.appealArbiter(), appealArbiter, "unchanged until accepted");
    }
}
