// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "./EscrowBase.sol";

/// @notice Mirrors proposeArbiter.tree, acceptArbiter.tree,
/// proposeAppealArbiter.tree and acceptAppealArbiter.tree.
contract ArbitersTest is EscrowBase {
    address internal candidate;

    function setUp() public override {
        super.setUp();
        candidate = makeAddr("candidate");
    }

    function _expectNotPending(address caller) private {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotPending.selector, caller));
    }

    /*//////////////////////////////////////////////////////////////
                            PROPOSE ARBITER
    //////////////////////////////////////////////////////////////*/

    function test_RevertWhen_ProposeArbiterCallerNotOwner() public {
        address[3] memory others = [arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.proposeArbiter(candidate);
        }
    }

    function test_RevertWhen_ProposedArbiterZero() public {
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
        escrow.proposeArbiter(address(0));
    }

    function test_proposeArbiter() public {
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.ArbiterProposed(arbiter, candidate);
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        assertEq(escrow.pendingArbiter(), candidate, "pending");
        assertEq(escrow.arbiter(), arbiter, "arbiter unchanged until accepted");
    }

    function test_proposeArbiter_replacesPending() public {
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        vm.prank(owner);
        escrow.proposeArbiter(stranger);
        assertEq(escrow.pendingArbiter(), stranger, "pending replaced");
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptArbiter();
    }

    /*//////////////////////////////////////////////////////////////
                            ACCEPT ARBITER
    //////////////////////////////////////////////////////////////*/

    function test_RevertWhen_NoArbiterPending() public {
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptArbiter();
    }

    function test_RevertWhen_AcceptArbiterCallerNotPending() public {
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

    /*//////////////////////////////////////////////////////////////
                        PROPOSE APPEAL ARBITER
    //////////////////////////////////////////////////////////////*/

    function test_RevertWhen_ProposeAppealArbiterCallerNotOwner() public {
        address[3] memory others = [arbiter, appealArbiter, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            escrow.proposeAppealArbiter(candidate);
        }
    }

    function test_RevertWhen_ProposedAppealArbiterZero() public {
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAddress.selector));
        escrow.proposeAppealArbiter(address(0));
    }

    function test_proposeAppealArbiter() public {
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.AppealArbiterProposed(appealArbiter, candidate);
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        assertEq(escrow.pendingAppealArbiter(), candidate, "pending");
        assertEq(escrow.appealArbiter(), appealArbiter, "unchanged until accepted");
    }

    /*//////////////////////////////////////////////////////////////
                        ACCEPT APPEAL ARBITER
    //////////////////////////////////////////////////////////////*/

    function test_RevertWhen_NoAppealArbiterPending() public {
        vm.prank(candidate);
        _expectNotPending(candidate);
        escrow.acceptAppealArbiter();
    }

    function test_RevertWhen_AcceptAppealArbiterCallerNotPending() public {
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

    /// @dev A rotation mid-dispute hands the open dispute to the new arbiter.
    function test_acceptArbiter_midDispute() public {
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
