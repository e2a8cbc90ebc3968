// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AgentRegistry} from "../../src/AgentRegistry.sol";
import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";
import {TaskEscrow} from "../../src/TaskEscrow.sol";
import {Test} from "../utils/Test.sol";
import {svm} from "./SVM.sol";

/// @notice Symbolic checks, run by halmos (`make audit`): each `check_` holds
/// for every caller, every function of the escrow's ABI and every time, not
/// only for the inputs a fuzzer happens to draw. Properties use `assert`
/// (halmos reports a failed one with a counterexample; a path that merely
/// reverts is a path the EVM would not take, and is not a counterexample).
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
        registry = new AgentRegistry(address(0));
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

    /// @dev Takes the task to the status `stage` picks (Created, Accepted,
    /// Completed, Disputed, Ruled or Appealed), keeping `task` in step.
    function _reach(uint256 stage) internal {
        if (stage >= 1) {
            vm.prank(EXECUTOR);
            escrow.acceptTask(id, task);
            task.status = ITaskEscrow.Status.Accepted;
        }
        if (stage >= 2) {
            vm.prank(EXECUTOR);
            escrow.completeTask(id, task, "data:,r");
            task.status = ITaskEscrow.Status.Completed;
            task.resultHash = keccak256("data:,r");
        }
        if (stage >= 3) {
            vm.prank(CLIENT);
            escrow.disputeTask(id, task, "data:,why");
            task.status = ITaskEscrow.Status.Disputed;
        }
        if (stage >= 4) {
            vm.prank(ARBITER);
            escrow.resolveDispute(id, task, 4000, "data:,ruling");
            task.status = ITaskEscrow.Status.Ruled;
            task.executorShareBps = 4000;
        }
        if (stage >= 5) {
            vm.prank(CLIENT);
            escrow.appealRuling(id, task, "data:,appeal");
            task.status = ITaskEscrow.Status.Appealed;
        }
    }

    /// @dev One call of the escrow's ABI, `which` picking the function: the
    /// task's own state where a function takes it (a forged one is refused
    /// by its hash), every other argument symbolic.
    function _anyCall(uint256 which) internal view returns (bytes memory) {
        ITaskEscrow.Task memory t = task;
        uint16 bps = uint16(svm.createUint256("bps"));
        uint8 rating = uint8(svm.createUint256("rating"));
        string memory uri = "data:,u";
        if (which == 0) return abi.encodeCall(ITaskEscrow.acceptTask, (id, t));
        if (which == 1) return abi.encodeCall(ITaskEscrow.completeTask, (id, t, uri));
        if (which == 2) return abi.encodeCall(ITaskEscrow.deliver, (id, t, uri));
        if (which == 3) return abi.encodeCall(ITaskEscrow.approvePayment, (id, t, rating));
        if (which == 4) return abi.encodeCall(ITaskEscrow.releasePayment, (id, t));
        if (which == 5) return abi.encodeCall(ITaskEscrow.disputeTask, (id, t, uri));
        if (which == 6) return abi.encodeCall(ITaskEscrow.resolveDispute, (id, t, bps, uri));
        if (which == 7) return abi.encodeCall(ITaskEscrow.appealRuling, (id, t, uri));
        if (which == 8) return abi.encodeCall(ITaskEscrow.resolveAppeal, (id, t, bps, uri));
        if (which == 9) return abi.encodeCall(ITaskEscrow.finalizeRuling, (id, t));
        if (which == 10) return abi.encodeCall(ITaskEscrow.claimDisputeDefault, (id, t));
        if (which == 11) return abi.encodeCall(ITaskEscrow.refundExpired, (id, t));
        if (which == 12) return abi.encodeCall(ITaskEscrow.cancelTask, (id, t));
        if (which == 13) {
            address to = svm.createAddress("newExecutor");
            uint40 deadline = uint40(svm.createUint256("newDeadline"));
            return abi.encodeCall(ITaskEscrow.reassignTask, (id, t, to, deadline, bytes32("summarize")));
        }
        if (which == 14) {
            uint256[] memory ids = new uint256[](1);
            ids[0] = id;
            ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](1);
            ts[0] = t;
            uint8[] memory ratings = new uint8[](1);
            ratings[0] = rating;
            return abi.encodeCall(ITaskEscrow.approvePayments, (ids, ts, ratings));
        }
        if (which == 15) return abi.encodeCall(ITaskEscrow.declineTask, (id, t, uri));
        // Creation from the caller, with a symbolic amount and executor.
        ITaskEscrow.CreateParams memory p = ITaskEscrow.CreateParams({
            ref: bytes32(svm.createUint256("ref")),
            planId: "plan",
            parentId: id,
            capability: "summarize",
            client: CLIENT,
            executor: svm.createAddress("executor"),
            amount: uint128(svm.createUint256("amount")),
            deadline: uint40(block.timestamp + WINDOW),
            reviewWindow: WINDOW,
            specURI: "data:,y"
        });
        return abi.encodeCall(ITaskEscrow.createTask, (p));
    }

    /// @dev Any caller, any escrow function, the task in any open status, any
    /// later time: supply unchanged, the escrow and the task's parties hold
    /// together what they held (token conservation across every external
    /// function), and a caller who is no party gains nothing.
    function check_tokensOnlyFlowBetweenEscrowAndParties() public {
        _reach(svm.createUint256("stage") % 6);
        address caller = svm.createAddress("caller");
        vm.assume(caller != address(escrow));
        vm.warp(block.timestamp + svm.createUint256("elapsed") % (60 days));
        bytes memory data = _anyCall(svm.createUint256("which") % 17);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));
        uint256 partiesBefore = usdc.balanceOf(FUNDER) + usdc.balanceOf(EXECUTOR);
        uint256 callerBefore = usdc.balanceOf(caller);
        uint256 supply = usdc.totalSupply();

        vm.prank(caller);
        (bool ok,) = address(escrow).call(data);
        ok; // a reverted call must move nothing either

        assert(usdc.totalSupply() == supply); // supply unchanged
        assert(
            usdc.balanceOf(address(escrow)) + usdc.balanceOf(FUNDER) + usdc.balanceOf(EXECUTOR)
                == escrowBefore + partiesBefore
        ); // escrow and parties hold what they held together
        if (caller != FUNDER && caller != EXECUTOR) {
            assert(usdc.balanceOf(caller) == callerBefore); // a non-party gains nothing
        }
    }

    /// @dev A caller who is none of the task's parties, arbiters or owner,
    /// calling any escrow function before any deadline or window ends, moves
    /// none of the task's funds and leaves the task as it was.
    function check_nonPartyCannotMoveFundsBeforeDeadline() public {
        _reach(svm.createUint256("stage") % 6);
        address caller = svm.createAddress("caller");
        vm.assume(caller != FUNDER && caller != CLIENT && caller != EXECUTOR);
        vm.assume(caller != ARBITER && caller != APPEAL_ARBITER && caller != OWNER);
        vm.assume(caller != address(escrow));
        bytes memory data = _anyCall(svm.createUint256("which") % 17);
        bytes32 hashBefore = escrow.taskHash(id);
        uint256 before = usdc.balanceOf(address(escrow));
        vm.prank(caller);
        (bool ok,) = address(escrow).call(data);
        ok;
        assert(usdc.balanceOf(address(escrow)) == before); // the task's funds stay
        assert(escrow.taskHash(id) == hashBefore); // the task is unchanged
    }

    /// @dev Created: past its deadline anyone can refund it, and it ends terminal.
    function check_createdHasADeadlinePath() public {
        address caller = svm.createAddress("caller");
        vm.warp(uint256(task.deadline) + 1 + svm.createUint256("late") % (365 days));
        vm.prank(caller);
        (bool ok,) = address(escrow).call(abi.encodeCall(ITaskEscrow.refundExpired, (id, task)));
        assert(ok); // no revert: the path exists for any caller, any time past the deadline
        assert(usdc.balanceOf(address(escrow)) == 0); // refunded
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
        (bool ok,) = address(escrow).call(abi.encodeCall(ITaskEscrow.releasePayment, (id, task)));
        assert(ok); // no revert: the path exists for any caller, any time past the window
        assert(usdc.balanceOf(EXECUTOR) == AMOUNT); // paid
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
        (bool ok,) = address(escrow).call(abi.encodeCall(ITaskEscrow.claimDisputeDefault, (id, task)));
        assert(ok); // no revert: the path exists for any caller, any time past the window
        assert(usdc.balanceOf(address(escrow)) == 0); // refunded
    }
}
