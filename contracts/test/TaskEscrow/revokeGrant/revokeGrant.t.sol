// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors revokeGrant.tree.
contract RevokeGrantTest is GrantBase {
    function test_RevertWhen_CallerNotSponsor() public {
        // it should revert with TaskEscrowGrantNotSponsor
        ITaskEscrow.Grant memory g = _grant();
        address[3] memory others = [operator, funder, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantNotSponsor.selector, others[i]));
            escrow.revokeGrant(g);
        }
        assertFalse(_revoked(g), "not revoked");
    }

    function test_RevertWhen_AlreadyRevoked() public {
        // it should revert with TaskEscrowGrantRevoked
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        vm.prank(sponsor);
        _expectGrantRevoked(_digest(g));
        escrow.revokeGrant(g);
    }

    function test_WhenPaused() public {
        // it should still revoke
        _pause();
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        assertTrue(_revoked(g), "revoked while paused");
    }

    function test_RevokeNeverUsed() public {
        // it should revoke a grant never used, keeping its spent at zero
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        assertTrue(_revoked(g), "revoked");
        assertEq(_spent(g), 0, "spent");
    }

    function test_RevokeUsed() public {
        // it should revoke a grant already used, keeping what it spent
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _grantParamsN(2));
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        assertTrue(_revoked(g), "revoked");
        assertEq(_spent(g), 2 * AMOUNT, "spent kept");
    }

    function test_RevokeMarkedFullUse() public {
        // it should revoke a grant used in full by a marked first use, grantSpent still the budget
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _fullMarkedParams(g));
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertTrue(revoked, "revoked");
        assertEq(spent, BUDGET, "grantSpent: the budget");
        assertEq(_spent(g), 0, "grantState: no spending recorded");
        // Revoked once: a second revocation reverts as for any grant.
        vm.prank(sponsor);
        _expectGrantRevoked(_digest(g));
        escrow.revokeGrant(g);
    }

    function test_EmitsGrantRevoked() public {
        // it should emit {GrantRevoked}
        ITaskEscrow.Grant memory g = _grant();
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantRevoked(_digest(g), sponsor, PLAN);
        vm.prank(sponsor);
        escrow.revokeGrant(g);
    }

    function test_OtherGrantsUsable() public {
        // it should leave the sponsor's other grants usable
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        _createUnder(h, _grantParamsN(1));
        assertEq(_spent(h), AMOUNT, "the other grant spends");
        assertFalse(_revoked(h), "the other grant is not revoked");
    }
}
