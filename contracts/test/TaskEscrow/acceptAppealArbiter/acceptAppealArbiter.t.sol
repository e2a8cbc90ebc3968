// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors acceptAppealArbiter.tree.
contract AcceptAppealArbiterTest is EscrowBase {
    address internal candidate;

    function setUp() public override {
        super.setUp();
        candidate = makeAddr("candidate");
    }

    function test_RevertWhen_NoAppealArbiterPending() public {
        // it should revert with TaskEscrowNotPending
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptAppealArbiter();
    }

    function test_RevertWhen_AcceptAppealArbiterCallerNotPending() public {
        // it should revert with TaskEscrowNotPending
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        // A pending arbiter is not a pending appeal arbiter.
        vm.prank(owner);
        escrow.proposeArbiter(stranger);
        address[4] memory others = [owner, arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectNotPending(others[i]);
            escrow.acceptAppealArbiter();
        }
    }

    function test_acceptAppealArbiter() public {
        // it should make the caller the appeal arbiter
        // it should clear pendingAppealArbiter
        // it should emit an {AppealArbiterChanged} event
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.AppealArbiterChanged(appealArbiter, candidate);
        vm.prank(candidate);
        escrow.acceptAppealArbiter();
        assertEq(escrow.appealArbiter(), candidate, "appeal arbiter");
        assertEq(escrow.pendingAppealArbiter(), address(0), "pending cleared");
        assertEq(escrow.arbiter(), arbiter, "arbiter untouched");

        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptAppealArbiter();
    }
}
