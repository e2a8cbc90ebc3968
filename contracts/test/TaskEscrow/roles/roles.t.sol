// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Every state-changing function against every role: owner, funder,
/// client, executor, other executor, arbiter, appeal arbiter, stranger. Each
/// test puts a task in the state the function needs, shows every role without
/// the right reverts with the exact error, then that the right role succeeds.
/// Anyone-callable functions succeed for every role, each on a fresh task.
contract RoleMatrixTest is EscrowBase {
    uint256 internal constant ROLES = 8;

    address[ROLES] internal roles;
    string[ROLES] internal names;

    function setUp() public override {
        super.setUp();
        roles = [owner, funder, client, executor, executor2, arbiter, appealArbiter, stranger];
        names = ["owner", "funder", "client", "executor", "executor2", "arbiter", "appealArbiter", "stranger"];
    }

    function _is(address who, address a) private pure returns (bool) {
        return who == a;
    }

    function _expectUnauthorized(address who) private {
        _expectRevertUnauthorized(who);
    }

    function _expectNotOwner(address who) private {
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, who));
    }

    /*//////////////////////////////////////////////////////////////
                        CREATION: ANYONE (BECOMES FUNDER)
    //////////////////////////////////////////////////////////////*/

    function _paramsFor(address creator) private returns (ITaskEscrow.CreateParams memory p) {
        p = _params(_nextRef());
        // Nobody may fund work they execute: the executor role hires the other executor.
        if (creator == executor) p.executor = executor2;
    }

    function test_createTask_anyRole() public {
        for (uint256 i; i < ROLES; ++i) {
            address who = roles[i];
            _mint(who, AMOUNT);
            vm.prank(who);
            usdc.approve(address(escrow), AMOUNT);
            ITaskEscrow.CreateParams memory p = _paramsFor(who);
            ITaskEscrow.Task memory t = _expectedCreated(p, who);
            vm.prank(who);
            uint256 id = escrow.createTask(p);
            assertEq(id, escrow.taskIdFor(who, p.ref), names[i]);
            _assertStored(id, t);
        }
    }

    function test_createTaskWithPermit_anyRole() public {
        bytes32 typehash =
            keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");
        uint256 deadline_ = block.timestamp + 1 hours;
        for (uint256 i; i < ROLES; ++i) {
            address who = roles[i];
            uint256 key = uint256(keccak256(bytes(names[i])));
            assertEq(vm.addr(key), who, "role key");
            _mint(who, AMOUNT);
            vm.prank(who);
            usdc.approve(address(escrow), 0);
            bytes32 structHash =
                keccak256(abi.encode(typehash, who, address(escrow), AMOUNT, usdc.nonces(who), deadline_));
            (uint8 v, bytes32 r, bytes32 s) =
                vm.sign(key, keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash)));
            ITaskEscrow.CreateParams memory p = _paramsFor(who);
            ITaskEscrow.Task memory t = _expectedCreated(p, who);
            vm.prank(who);
            uint256 id = escrow.createTaskWithPermit(p, deadline_, v, r, s);
            _assertStored(id, t);
        }
    }

    /*//////////////////////////////////////////////////////////////
                        LIFECYCLE: ONE ROLE ONLY
    //////////////////////////////////////////////////////////////*/

    function test_acceptTask_onlyExecutor() public {
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], executor)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.acceptTask(id, t);
        }
        _accept(id, t);
    }

    function test_completeTask_onlyExecutor() public {
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], executor)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.completeTask(id, t, RESULT);
        }
        _complete(id, t);
    }

    function test_approvePayment_onlyClient() public {
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.approvePayment(id, t, RATING);
        }
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
    }

    function test_approvePayments_onlyClient() public {
        uint256[] memory ids = new uint256[](2);
        ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](2);
        (ids[0], ts[0]) = _completed();
        (ids[1], ts[1]) = _completed();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.approvePayments(ids, ts, _ratings(2));
        }
        vm.prank(client);
        escrow.approvePayments(ids, ts, _ratings(2));
        _assertStored(ids[0], _settled(ts[0], ITaskEscrow.Status.Paid, BPS));
        _assertStored(ids[1], _settled(ts[1], ITaskEscrow.Status.Paid, BPS));
    }

    function test_disputeTask_onlyClient() public {
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.disputeTask(id, t, "reason");
        }
        _dispute(id, t);
    }

    function test_cancelTask_onlyClient() public {
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.cancelTask(id, t);
        }
        vm.prank(client);
        escrow.cancelTask(id, t);
        _assertStored(id, _settled(t, ITaskEscrow.Status.Cancelled, 0));
    }

    function test_declineTask_onlyExecutor() public {
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], executor)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.declineTask(id, t, "reason");
        }
        vm.prank(executor);
        escrow.declineTask(id, t, "reason");
        _assertStored(id, _settled(t, ITaskEscrow.Status.Declined, 0));
    }

    function test_reassignTask_onlyClient() public {
        (uint256 id, ITaskEscrow.Task memory t) = _accepted();
        vm.warp(uint256(t.deadline) + 1);
        uint40 newDeadline = uint40(block.timestamp + 1 days);
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        }
        vm.prank(client);
        escrow.reassignTask(id, t, executor2, newDeadline, CAPABILITY);
        t.executor = executor2;
        t.deadline = newDeadline;
        t.status = ITaskEscrow.Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
    }

    function test_appealRuling_onlyClientOrExecutor() public {
        (uint256 id, ITaskEscrow.Task memory t) = _ruled(5000);
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], client) || _is(roles[i], executor)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.appealRuling(id, t, "appeal");
        }
        _appeal(id, t, client);
        (uint256 id2, ITaskEscrow.Task memory t2) = _ruled(5000);
        _appeal(id2, t2, executor);
    }

    function test_resolveDispute_onlyArbiter() public {
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], arbiter)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.resolveDispute(id, t, 5000, "r");
        }
        _rule(id, t, 5000);
    }

    function test_resolveAppeal_onlyAppealArbiter() public {
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(5000);
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], appealArbiter)) continue;
            vm.prank(roles[i]);
            _expectUnauthorized(roles[i]);
            escrow.resolveAppeal(id, t, 5000, "r");
        }
        _resolveAppeal(id, t, 5000);
    }

    /*//////////////////////////////////////////////////////////////
                        LIFECYCLE: ANYONE
    //////////////////////////////////////////////////////////////*/

    function test_releasePayment_anyRole() public {
        for (uint256 i; i < ROLES; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = _completed();
            vm.warp(uint256(t.updatedAt) + t.reviewWindow + 1);
            vm.prank(roles[i]);
            escrow.releasePayment(id, t);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
        }
    }

    function test_finalizeRuling_anyRole() public {
        for (uint256 i; i < ROLES; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = _ruled(2500);
            (uint256 id2, ITaskEscrow.Task memory t2) = _appealed(7500);
            vm.warp(uint256(t.updatedAt) + APPEAL_RULING_WINDOW + 1); // past both the appeal and appeal
            // ruling windows
            vm.prank(roles[i]);
            escrow.finalizeRuling(id, t);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Split, 2500));
            vm.prank(roles[i]);
            escrow.finalizeRuling(id2, t2);
            _assertStored(id2, _settled(t2, ITaskEscrow.Status.Split, 7500));
        }
    }

    function test_claimDisputeDefault_anyRole() public {
        for (uint256 i; i < ROLES; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = _disputed();
            vm.warp(uint256(t.updatedAt) + t.disputeWindow + 1);
            vm.prank(roles[i]);
            escrow.claimDisputeDefault(id, t);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Refunded, 0));
        }
    }

    function test_refundExpired_anyRole() public {
        for (uint256 i; i < ROLES; ++i) {
            (uint256 id, ITaskEscrow.Task memory t) = i % 2 == 0 ? _create() : _accepted();
            vm.warp(uint256(t.deadline) + 1);
            vm.prank(roles[i]);
            escrow.refundExpired(id, t);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Expired, 0));
        }
    }

    /*//////////////////////////////////////////////////////////////
                            ADMIN: OWNER ONLY
    //////////////////////////////////////////////////////////////*/

    function test_pause_onlyOwner() public {
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], owner)) continue;
            vm.prank(roles[i]);
            _expectNotOwner(roles[i]);
            escrow.pause();
        }
        vm.prank(owner);
        escrow.pause();
        assertTrue(escrow.paused(), "paused");
    }

    function test_unpause_onlyOwner() public {
        vm.prank(owner);
        escrow.pause();
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], owner)) continue;
            vm.prank(roles[i]);
            _expectNotOwner(roles[i]);
            escrow.unpause();
        }
        vm.prank(owner);
        escrow.unpause();
        assertFalse(escrow.paused(), "unpaused");
    }

    function test_proposeArbiter_onlyOwner() public {
        address candidate = makeAddr("candidate");
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], owner)) continue;
            vm.prank(roles[i]);
            _expectNotOwner(roles[i]);
            escrow.proposeArbiter(candidate);
        }
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        assertEq(escrow.pendingArbiter(), candidate, "pending");
    }

    function test_proposeAppealArbiter_onlyOwner() public {
        address candidate = makeAddr("candidate");
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], owner)) continue;
            vm.prank(roles[i]);
            _expectNotOwner(roles[i]);
            escrow.proposeAppealArbiter(candidate);
        }
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        assertEq(escrow.pendingAppealArbiter(), candidate, "pending");
    }

    function test_setWindows_onlyOwner() public {
        for (uint256 i; i < ROLES; ++i) {
            if (_is(roles[i], owner)) continue;
            vm.prank(roles[i]);
            _expectNotOwner(roles[i]);
            escrow.setWindows(1 days, 0, APPEAL_RULING_WINDOW);
        }
        vm.prank(owner);
        escrow.setWindows(1 days, 0, APPEAL_RULING_WINDOW);
        assertEq(escrow.disputeWindow(), 1 days, "set");
    }

    /*//////////////////////////////////////////////////////////////
                        ADMIN: THE PENDING ONE ONLY
    //////////////////////////////////////////////////////////////*/

    function test_acceptArbiter_onlyPending() public {
        address candidate = makeAddr("candidate");
        vm.prank(owner);
        escrow.proposeArbiter(candidate);
        for (uint256 i; i < ROLES; ++i) {
            vm.prank(roles[i]);
            _expectNotPending(roles[i]);
            escrow.acceptArbiter();
        }
        vm.prank(candidate);
        escrow.acceptArbiter();
        assertEq(escrow.arbiter(), candidate, "arbiter");
    }

    function test_acceptAppealArbiter_onlyPending() public {
        address candidate = makeAddr("candidate");
        vm.prank(owner);
        escrow.proposeAppealArbiter(candidate);
        for (uint256 i; i < ROLES; ++i) {
            vm.prank(roles[i]);
            _expectNotPending(roles[i]);
            escrow.acceptAppealArbiter();
        }
        vm.prank(candidate);
        escrow.acceptAppealArbiter();
        assertEq(escrow.appealArbiter(), candidate, "appeal arbiter");
    }

    /// @dev A role-holder proposed for another role is, for that call, just the pending one.
    function test_acceptArbiter_pendingIsAnExistingRole() public {
        for (uint256 i; i < ROLES; ++i) {
            address pending = roles[i];
            vm.prank(owner);
            escrow.proposeArbiter(pending);
            for (uint256 j; j < ROLES; ++j) {
                if (j == i) continue;
                vm.prank(roles[j]);
                _expectNotPending(roles[j]);
                escrow.acceptArbiter();
            }
            vm.prank(pending);
            escrow.acceptArbiter();
            assertEq(escrow.arbiter(), pending, names[i]);
        }
    }
}
