// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors acceptArbiter.tree.
contract AcceptArbiterTest is EscrowBase {
    address internal candidate;

    function setUp() public override {
        super.setUp();
        candidate = makeAddr("candidate");
    }

    function test_RevertWhen_NoArbiterPending() public {
        // it should revert with TaskEscrowNotPending
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptArbiter();
    }

    function test_RevertWhen_AcceptArbiterCallerNotPending() public {
        // it should revert with TaskEscrowNotPending
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        address[4] memory others = [owner, arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectNotPending(others[i]);
            escrow.acceptArbiter();
        }
    }

    function test_acceptArbiter() public {
        // it should make the caller the arbiter (open disputes included)
        // it should clear pendingArbiter
        // it should emit an {ArbiterChanged} event
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.ArbiterChanged(arbiter, candidate);
        vm.prank(candidate);
        escrow.acceptArbiter();
        assertEq(escrow.arbiter(), candidate, "arbiter");
        assertEq(escrow.pendingArbiter(), address(0), "pending cleared");
        assertEq(escrow.appealArbiter(), appealArbiter, "appeal arbiter untouched");

        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptArbiter();
    }

    /// @dev A rotation mid-dispute hands the open dispute to the new arbiter.
    function test_acceptArbiter_midDispute() public {
        // it should make the caller the arbiter (open disputes included)
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        // Until accepted, the old arbiter still rules.
        vm.prank(candidate);
        _expectRevertUnauthorized(candidate);
        escrow.resolveDispute(id, t, 5000, "r");
        vm.prank(candidate);
        escrow.acceptArbiter();
        vm.prank(candidate);
        escrow.resolveDispute(id, t, 5000, "r");
    }
}
