// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice The grant functions against every role: owner, funder, client,
/// executor, other executor, arbiter, appeal arbiter, stranger, the grant's
/// sponsor and its operator. Every role but the right one reverts with the exact
/// error; then the right one succeeds. The views answer anyone.
contract GrantRoleMatrixTest is GrantBase {
    uint256 internal constant ROLES = 10;

    address[ROLES] internal roles;

    function setUp() public override {
        super.setUp();
        roles =
            [owner, funder, client, executor, executor2, arbiter, appealArbiter, stranger, sponsor, operator];
    }

    function test_createWithGrants_onlyOperator() public {
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        for (uint256 i; i < ROLES; ++i) {
            if (roles[i] == operator) continue;
            vm.prank(roles[i]);
            _expectGrantOperator(roles[i]);
            escrow.createWithGrants(bs);
        }
        vm.prank(operator);
        escrow.createWithGrants(bs);
        assertEq(_spent(g), AMOUNT, "the operator spent it");
    }

    function test_revokeGrant_onlySponsor() public {
        ITaskEscrow.Grant memory g = _grant();
        for (uint256 i; i < ROLES; ++i) {
            if (roles[i] == sponsor) continue;
            vm.prank(roles[i]);
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantNotSponsor.selector, roles[i]));
            escrow.revokeGrant(g);
        }
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        assertTrue(_revoked(g), "the sponsor revoked it");
    }

    function test_grantViews_anyRole() public {
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _grantParamsN(1));
        for (uint256 i; i < ROLES; ++i) {
            vm.prank(roles[i]);
            assertEq(escrow.grantDigest(g), _digest(g), "digest");
            vm.prank(roles[i]);
            (uint128 spent, bool revoked) = escrow.grantState(_digest(g));
            assertEq(spent, AMOUNT, "spent");
            assertFalse(revoked, "revoked");
            vm.prank(roles[i]);
            (spent, revoked) = escrow.grantSpent(g);
            assertEq(spent, AMOUNT, "grantSpent");
            assertFalse(revoked, "grantSpent revoked");
        }
    }
}
