// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AgentRegistry} from "../../src/AgentRegistry.sol";
import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";
import {TaskEscrow} from "../../src/TaskEscrow.sol";
import {Test} from "../utils/Test.sol";
import {svm} from "./SVM.sol";

/// @notice Symbolic checks, run by halmos (`make audit`): each `check_` holds
/// for every caller, every calldata of the escrow's ABI and every time, not
/// only for the inputs a fuzzer happens to draw.
contract EscrowSymbolic is Test {
    uint128 internal constant AMOUNT = 1_000_000;
    uint32 internal constant WINDOW = 1 days;

    MockUSDC internal usdc;
    AgentRegistry internal registry;
    TaskEscrow internal escrow;

    address internal constant OWNER = address(0x1000);
    address internal constant FUNDER = address(0x1001);
    address internal constant CLIENT = address(0x1002);
    address internal constant EXECUTOR = address(0x1003);
    address internal constant ARBITER = address(0x1004);
    address internal constant APPEAL_ARBITER = address(0x1005);

    uint256 internal id;
    ITaskEscrow.Task internal task;

    function setUp() public {
        vm.warp(1_700_000_000);
        usdc = new MockUSDC(OWNER);
        registry = new AgentRegistry();
        escrow = new TaskEscrow(
            address(usdc), address(registry), OWNER, ARBITER, APPEAL_ARBITER, WINDOW, WINDOW, WINDOW
        );
        bytes32[] memory caps = new bytes32[](1);
        caps[0] = "summarize";
        uint128[] memory prices = new uint128[](1);
        prices[0] = 1;
        vm.prank(EXECUTOR);
        registry.register("ipfs://card", caps, prices);
        vm.prank(OWNER);
        usdc.mint(FUNDER, 10 * uint256(AMOUNT));
        vm.prank(FUNDER);
        usdc.approve(address(escrow), type(uint256).max);

        ITaskEscrow.CreateParams memory p = ITaskEscrow.CreateParams({
            ref: "ref",
            planId: "plan",
            parentId: 0,
            capability: "summarize",
            client: CLIENT,
            executor: EXECUTOR,
            amount: AMOUNT,
            deadline: uint40(block.timestamp + WINDOW),
            reviewWindow: WINDOW,
            specURI: "data:,x"
        });
        vm.prank(FUNDER);
        id = escrow.createTask(p);
        task = ITaskEscrow.Task({
            funder: FUNDER,
            client: CLIENT,
            executor: EXECUTOR,
            amount: AMOUNT,
            deadline: p.deadline,
            updatedAt: uint40(block.timestamp),
            reviewWindow: WINDOW,
            disputeWindow: WINDOW,
            appealWindow: WINDOW,
            appealRulingWindow: WINDOW,
            executorShareBps: 0,
            status: ITaskEscrow.Status.Created,
            specHash: keccak256("data:,x"),
            resultHash: bytes32(0)
        });
    }

    /// @dev Any caller, any escrow call, any later time: tokens only move
    /// between the escrow and the task's parties (funder, executor), the
    /// total supply is unchanged, and a caller who is no party gains nothing.
    function check_tokensOnlyFlowBetweenEscrowAndParties() public {
        address caller = svm.createAddress("caller");
        vm.assume(caller != address(escrow));
        vm.warp(block.timestamp + svm.createUint256("elapsed") % (60 days));
        uint256 escrowBefore = usdc.balanceOf(address(escrow));
        uint256 partiesBefore = usdc.balanceOf(FUNDER) + usdc.balanceOf(EXECUTOR);
        uint256 callerBefore = usdc.balanceOf(caller);
        uint256 supply = usdc.totalSupply();

        vm.prank(caller);
        (bool ok,) = address(escrow).call(svm.createCalldata("TaskEscrow"));
        ok; // a reverted call must move nothing either

        assertEq(usdc.totalSupply(), supply, "supply unchanged");
        assertEq(
            usdc.balanceOf(address(escrow)) + usdc.balanceOf(FUNDER) + usdc.balanceOf(EXECUTOR),
            escrowBefore + partiesBefore,
            "escrow and parties hold what they held together"
        );
        if (caller != FUNDER && caller != EXECUTOR) {
            assertEq(usdc.balanceOf(caller), callerBefore, "a non-party gains nothing");
        }
    }

    /// @dev Whatever the caller sends, the open task's funds stay in the
    /// escrow unless that caller is one the task names (or an arbiter), or
    /// the call is a permissionless one past its deadline.
    function check_nonPartyCannotMoveFundsBeforeDeadline() public {
        address caller = svm.createAddress("caller");
        vm.assume(caller != FUNDER && caller != CLIENT && caller != EXECUTOR);
        vm.assume(caller != ARBITER && caller != APPEAL_ARBITER && caller != OWNER);
        vm.assume(caller != address(escrow));
        vm.warp(block.timestamp + svm.createUint256("elapsed") % WINDOW); // before the deadline
        uint256 before = usdc.balanceOf(address(escrow));
        vm.prank(caller);
        (bool ok,) = address(escrow).call(svm.createCalldata("TaskEscrow"));
        ok;
        assertEq(usdc.balanceOf(address(escrow)), before, "the task's funds stay");
        assertEq(escrow.taskHash(id), keccak256(abi.encode(task)), "the task is unchanged");
    }

    /// @dev Created: past its deadline anyone can refund it, and it ends terminal.
    function check_createdHasADeadlinePath() public {
        address caller = svm.createAddress("caller");
        vm.warp(uint256(task.deadline) + 1 + svm.createUint256("late") % (365 days));
        vm.prank(caller);
        escrow.refundExpired(id, task);
        assertEq(usdc.balanceOf(address(escrow)), 0, "refunded");
    }

    /// @dev Completed: past its review window anyone can release payment.
    function check_completedHasADeadlinePath() public {
        vm.prank(EXECUTOR);
        escrow.deliver(id, task, "data:,r");
        task.status = ITaskEscrow.Status.Completed;
        task.updatedAt = uint40(block.timestamp);
        task.resultHash = keccak256("data:,r");
        address caller = svm.createAddress("caller");
        vm.warp(uint256(task.updatedAt) + WINDOW + 1 + svm.createUint256("late") % (365 days));
        vm.prank(caller);
        escrow.releasePayment(id, task);
        assertEq(usdc.balanceOf(EXECUTOR), AMOUNT, "paid");
    }

    /// @dev Disputed: past the dispute window anyone claims the default refund.
    function check_disputedHasADeadlinePath() public {
        vm.prank(EXECUTOR);
        escrow.deliver(id, task, "data:,r");
        task.status = ITaskEscrow.Status.Completed;
        task.updatedAt = uint40(block.timestamp);
        task.resultHash = keccak256("data:,r");
        vm.prank(CLIENT);
        escrow.disputeTask(id, task, "data:,why");
        task.status = ITaskEscrow.Status.Disputed;
        address caller = svm.createAddress("caller");
        vm.warp(uint256(task.updatedAt) + WINDOW + 1 + svm.createUint256("late") % (365 days));
        vm.prank(caller);
        escrow.claimDisputeDefault(id, task);
        assertEq(usdc.balanceOf(address(escrow)), 0, "refunded");
    }
}
