// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors views.tree.
contract ViewsTest is EscrowBase {
    function test_views_constants() public view {
        // it should return BPS, window bounds, the deadline horizon, the token, both arbiters, pending
        // arbiters and windows
        assertEq(escrow.BPS(), 10_000, "BPS");
        assertEq(escrow.MIN_WINDOW(), 1 minutes, "MIN_WINDOW");
        assertEq(escrow.MAX_WINDOW(), 30 days, "MAX_WINDOW");
        assertEq(escrow.MAX_DEADLINE_HORIZON(), 365 days, "MAX_DEADLINE_HORIZON");
    }

    function test_views_rolesAndWindows() public view {
        // it should return BPS, window bounds, the deadline horizon, the token, both arbiters, pending
        // arbiters and windows
        assertEq(escrow.token(), address(usdc), "token");
        assertEq(escrow.owner(), owner, "owner");
        assertEq(escrow.arbiter(), arbiter, "arbiter");
        assertEq(escrow.appealArbiter(), appealArbiter, "appeal arbiter");
        assertEq(escrow.pendingArbiter(), address(0), "pending arbiter");
        assertEq(escrow.pendingAppealArbiter(), address(0), "pending appeal arbiter");
        assertEq(escrow.disputeWindow(), DISPUTE_WINDOW, "dispute window");
        assertEq(escrow.appealWindow(), APPEAL_WINDOW, "appeal window");
    }

    function test_taskHash_unknownIsZero() public view {
        // it should return zero
        assertEq(escrow.taskHash(_unknownId()), bytes32(0), "no task");
    }

    function test_taskHash_followsTheTask() public {
        // it should equal keccak256(abi.encode(task)) after every transition
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        assertEq(escrow.taskHash(id), escrow.hashTask(t), "created");
        t = _accept(id, t);
        assertEq(escrow.taskHash(id), escrow.hashTask(t), "accepted");
        t = _complete(id, t);
        assertEq(escrow.taskHash(id), escrow.hashTask(t), "completed");
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        t = _settled(t, ITaskEscrow.Status.Paid, BPS);
        assertEq(escrow.taskHash(id), escrow.hashTask(t), "paid: terminal hash stays");
    }

    /// @dev Task with the status as a raw byte, so the fuzzer cannot pick an invalid enum.
    struct RawTask {
        address funder;
        address client;
        address executor;
        uint128 amount;
        uint40 deadline;
        uint40 updatedAt;
        uint32 reviewWindow;
        uint32 disputeWindow;
        uint32 appealWindow;
        uint32 appealRulingWindow;
        uint16 executorShareBps;
        uint8 status;
        bytes32 specHash;
        bytes32 resultHash;
    }

    function testFuzz_hashTask_isKeccakOfAbiEncoding(RawTask memory raw) public view {
        // it should equal keccak256(abi.encode(task)) for any task
        raw.status = uint8(bound(raw.status, 0, 11));
        ITaskEscrow.Task memory t = abi.decode(abi.encode(raw), (ITaskEscrow.Task));
        assertEq(escrow.hashTask(t), keccak256(abi.encode(t)), "hashTask");
        assertEq(escrow.hashTask(t), keccak256(abi.encode(raw)), "same encoding");
    }

    function testFuzz_taskIdFor_isKeccakOfFunderAndRef(address funder_, bytes32 ref) public view {
        // it should equal uint256(keccak256(abi.encode(funder, ref)))
        assertEq(escrow.taskIdFor(funder_, ref), uint256(keccak256(abi.encode(funder_, ref))), "taskIdFor");
    }

    function testFuzz_taskIdFor_matchesCreate(bytes32 ref) public {
        // it should be the id createTask returns for that funder and ref
        (uint256 id,) = _create(_params(ref));
        assertEq(id, escrow.taskIdFor(funder, ref), "created id");
    }
}
