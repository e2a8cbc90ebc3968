// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors proposeArbiter.tree.
contract ProposeArbiterTest is EscrowBase {
    address internal candidate;

    function setUp() public override {
        super.setUp();
        candidate = makeAddr("candidate");
    }

    function test_RevertWhen_ProposeArbiterCallerNotOwner() public {
        // it should revert with OwnableUnauthorizedAccount
        address[3] memory others = [arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.proposeArbiter(candidate);
        }
    }

    function test_RevertWhen_ProposedArbiterZero() public {
        // it should revert with TaskEscrowZeroAddress
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
        escrow.proposeArbiter(address(0));
    }

    function test_proposeArbiter() public {
        // it should set pendingArbiter (replacing any earlier proposal)
        // it should leave the current arbiter in charge until accepted
        // it should emit an {ArbiterProposed} event
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.ArbiterProposed(arbiter, candidate);
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        assertEq(escrow.pendingArbiter(), candidate, "pending");
        assertEq(escrow.arbiter(), arbiter, "arbiter unchanged until accepted");
    }

    function test_proposeArbiter_replacesPending() public {
        // it should set pendingArbiter (replacing any earlier proposal)
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        vm.prank(owner);
        escrow.proposeArbiter(stranger);
        assertEq(escrow.pendingArbiter(), stranger, "pending replaced");
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptArbiter();
    }
}
