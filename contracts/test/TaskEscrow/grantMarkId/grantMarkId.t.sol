// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors grantMarkId.tree: the id of a grant's mark, a hash of three
/// words where every task id hashes two.
contract GrantMarkIdTest is GrantBase {
    function testFuzz_EqualsTheSpecHash(
        address who,
        bytes32 plan,
        address op,
        uint128 budget,
        uint40 validUntil,
        uint256 nonce
    ) public view {
        // it should equal uint256(keccak256(abi.encode(sponsor, grantDigest(grant), 1))), for any terms
        // it should differ from taskIdFor(sponsor, digest), the id of a task of the sponsor referenced by the
        // digest
        ITaskEscrow.Grant memory g = ITaskEscrow.Grant({
            sponsor: who, planId: plan, operator: op, budget: budget, validUntil: validUntil, nonce: nonce
        });
        bytes32 d = _digest(g);
        uint256 mark = escrow.grantMarkId(g);
        assertEq(mark, uint256(keccak256(abi.encode(who, d, uint256(1)))), "H(sponsor, digest, 1)");
        assertEq(mark, _markId(g), "as the tests compute it");
        assertNotEq(mark, escrow.taskIdFor(who, d), "not taskIdFor(sponsor, digest)");
        assertNotEq(mark, uint256(keccak256(abi.encode(who, d))), "not H(sponsor, digest)");
    }

    function test_TheDefaultGrant() public view {
        // it should equal uint256(keccak256(abi.encode(sponsor, grantDigest(grant), 1))), for any terms
        // it should differ from taskIdFor(sponsor, digest), the id of a task of the sponsor referenced by the
        // digest
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = escrow.grantDigest(g);
        assertEq(escrow.grantMarkId(g), uint256(keccak256(abi.encode(sponsor, d, uint256(1)))), "spec hash");
        assertNotEq(escrow.grantMarkId(g), escrow.taskIdFor(sponsor, d), "not taskIdFor(sponsor, digest)");
        // Another grant's terms, another mark.
        g.nonce = 2;
        assertNotEq(escrow.grantMarkId(g), escrow.grantMarkId(_grant()), "one mark per grant");
    }

    function test_IsTheGrantsTaskReferencedByTheDigest() public {
        // it should be the id of the grant's task referenced by its digest, in whichever use and place
        // it should differ from taskIdFor(sponsor, digest), the id of a task of the sponsor referenced by the
        // digest
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        // The first task of a first use.
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(g, _markedParamsN(g, 2));
        assertEq(ids[0], escrow.grantMarkId(g), "the first task is the mark");
        assertEq(escrow.taskHash(escrow.grantMarkId(g)), escrow.hashTask(ts[0]), "stored at grantMarkId");
        assertNotEq(ids[1], escrow.grantMarkId(g), "the second is not");
        assertEq(escrow.taskHash(escrow.taskIdFor(sponsor, d)), bytes32(0), "nothing at taskIdFor");
        // A later task of a later use of another grant.
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        _createUnder(h, _grantParamsN(1));
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].ref = _digest(h);
        (ids, ts) = _createUnder(h, ps);
        assertEq(ids[1], escrow.grantMarkId(h), "the second task of the second use is h's mark");
        assertEq(escrow.taskHash(escrow.grantMarkId(h)), escrow.hashTask(ts[1]), "stored at grantMarkId");
    }

    function test_WhenNoTaskOfTheGrantReferencedTheDigest() public {
        // it should name no task, whatever the sponsor or another grant referenced by the digest
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        assertEq(escrow.taskHash(escrow.grantMarkId(g)), bytes32(0), "never used");
        _createUnder(g, _grantParamsN(1));
        assertEq(escrow.taskHash(escrow.grantMarkId(g)), bytes32(0), "used, never by the digest");
        // The sponsor's own task referenced by the digest: an ordinary id.
        vm.prank(sponsor);
        uint256 own = escrow.createTask(_params(d));
        assertEq(own, escrow.taskIdFor(sponsor, d), "the sponsor's task: taskIdFor(sponsor, digest)");
        assertEq(escrow.taskHash(escrow.grantMarkId(g)), bytes32(0), "g has no mark");
        // Another grant's task referenced by the digest of a third grant: an ordinary id too.
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        ITaskEscrow.Grant memory k = _grant();
        k.nonce = 3;
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(1);
        ps[0].ref = _digest(k);
        vm.prank(operator);
        uint256[] memory ids = escrow.createWithGrants(_one(h, _signDigest(sponsorKey, _digest(h)), ps));
        assertEq(ids[0], escrow.taskIdFor(sponsor, _digest(k)), "h's task: taskIdFor(sponsor, digest)");
        assertEq(escrow.taskHash(escrow.grantMarkId(k)), bytes32(0), "k has no mark");
    }
}
