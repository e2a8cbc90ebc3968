// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {TaskEscrow} from "../../../src/TaskEscrow.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {EscrowStore} from "../stores/EscrowStore.sol";
import {EscrowBaseHandler} from "./EscrowBaseHandler.sol";

/// @notice Creates tasks (plain, with a permit, with a front-run permit),
/// tries to reuse references, and plays the owner: windows and pause.
contract EscrowCreateHandler is EscrowBaseHandler {
    uint256 internal constant MAX_AMOUNT = 1e12; // 1M USDC
    uint256 internal constant MAX_DEADLINE = 7 days;
    uint32 internal constant MAX_REVIEW = 3 days;

    constructor(TaskEscrow escrow_, MockUSDC usdc_, EscrowStore store_, address owner_)
        EscrowBaseHandler(escrow_, usdc_, store_, owner_)
    {}

    /*//////////////////////////////////////////////////////////////
                                CREATION
    //////////////////////////////////////////////////////////////*/

    /// @param permitMode 0: prior approval; 1: permit; 2: permit already submitted (front-run).
    function createTask(
        uint256 funderSeed,
        uint256 clientSeed,
        uint256 executorSeed,
        uint256 amountSeed,
        uint256 deadlineSeed,
        uint256 reviewSeed,
        bytes32 ref,
        uint8 permitMode
    ) external instrument("createTask") {
        address funder = _actor(_funders, funderSeed);
        ITaskEscrow.CreateParams memory p =
            _params(funder, clientSeed, executorSeed, amountSeed, deadlineSeed);
        p.reviewWindow = uint32(bound(reviewSeed, 1 minutes, MAX_REVIEW));
        // A fresh reference for this funder.
        while (escrow.taskHash(escrow.taskIdFor(funder, ref)) != 0) {
            ref = keccak256(abi.encode(ref));
        }
        p.ref = ref;

        if (escrow.paused()) {
            // Creation is the one thing a pause stops; then the owner lifts it.
            vm.prank(funder);
            try escrow.createTask(p) {
                store.recordUnexpectedSuccess();
            } catch (bytes memory err) {
                if (keccak256(err) == keccak256(abi.encodeWithSelector(Pausable.EnforcedPause.selector))) {
                    store.recordExpectedRevert();
                } else {
                    store.recordWrongRevert(err);
                }
            }
            vm.prank(owner);
            escrow.unpause();
            return;
        }

        ITaskEscrow.Task memory t = _createdTask(funder, p);

        uint256 id;
        permitMode %= 3;
        if (permitMode == 0) {
            _observeStart();
            vm.prank(funder);
            id = escrow.createTask(p);
        } else {
            vm.prank(funder);
            usdc.approve(address(escrow), 0);
            uint256 permitDeadline = block.timestamp + 1 hours;
            (uint8 v, bytes32 r, bytes32 s) = _signPermit(funder, p.amount, permitDeadline);
            if (permitMode == 2) usdc.permit(funder, address(escrow), p.amount, permitDeadline, v, r, s);
            _observeStart();
            vm.prank(funder);
            id = escrow.createTaskWithPermit(p, permitDeadline, v, r, s);
        }
        store.addTask(id, ref, t);
        _observeEnd(id, ITaskEscrow.Status.None);
        if (permitMode != 0) {
            vm.prank(funder);
            usdc.approve(address(escrow), type(uint256).max);
        }
    }

    /// @notice A wave of 1..=5 fresh tasks from one funder in one call (by
    /// allowance): each item recorded as createTask records it, and the one
    /// token transfer must carry exactly the sum.
    function createTasks(uint256 funderSeed, uint256 seed, uint8 count) external instrument("createTasks") {
        if (escrow.paused()) return; // createTask covers the paused path
        address funder = _actor(_funders, funderSeed);
        uint256 n = bound(count, 1, 5);
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](n);
        uint256 sum;
        for (uint256 i; i < n; ++i) {
            uint256 s = uint256(keccak256(abi.encode(seed, i)));
            ps[i] = _params(funder, s, s >> 8, s >> 16, s >> 24);
            bytes32 ref = keccak256(abi.encode("batch", s));
            while (escrow.taskHash(escrow.taskIdFor(funder, ref)) != 0) {
                ref = keccak256(abi.encode(ref));
            }
            ps[i].ref = ref;
            sum += ps[i].amount;
        }
        vm.recordLogs();
        vm.prank(funder);
        uint256[] memory ids = escrow.createTasks(ps);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 pulled;
        for (uint256 i; i < logs.length; ++i) {
            Vm.Log memory l = logs[i];
            if (l.emitter == address(usdc) && l.topics[0] == IERC20.Transfer.selector) {
                if (address(uint160(uint256(l.topics[2]))) == address(escrow)) {
                    pulled += abi.decode(l.data, (uint256));
                }
            }
        }
        if (pulled != sum) {
            store.recordWrongRevert(abi.encode("batch pulled other than the sum", pulled, sum));
        }
        _recordCreated(funder, ps, ids);
    }

    /// @notice Re-creating with a (funder, ref) already used must always revert.
    /// A grant's mark (id grantMarkId) does not use its (sponsor, digest): the
    /// sponsor's first task referenced by the digest is created, with id
    /// taskIdFor(sponsor, digest), beside the mark; a second one must revert.
    function attemptDuplicateRef(
        uint256 taskSeed,
        uint256 clientSeed,
        uint256 executorSeed,
        uint256 amountSeed,
        uint256 deadlineSeed
    ) external instrument("attemptDuplicateRef") {
        uint256 n = store.taskCount();
        if (n == 0) return;
        uint256 id = store.taskIdAt(taskSeed % n);
        EscrowStore.Record memory rec = store.record(id);
        ITaskEscrow.CreateParams memory p =
            _params(rec.funder, clientSeed, executorSeed, amountSeed, deadlineSeed);
        p.ref = rec.ref;
        uint256 refId = escrow.taskIdFor(rec.funder, rec.ref);
        if (rec.mark && escrow.taskHash(refId) == 0 && !escrow.paused()) {
            _createBesideMark(rec.funder, p, id, refId);
            return;
        }
        bytes memory expected = escrow.paused()
            ? abi.encodeWithSelector(Pausable.EnforcedPause.selector)
            : abi.encodeWithSelector(ITaskEscrow.TaskEscrowDuplicateReference.selector, rec.funder, rec.ref);
        uint256 unexpectedBefore = store.unexpectedSuccesses();
        _expectRejected(rec.funder, abi.encodeCall(ITaskEscrow.createTask, (p)), expected, id);
        if (store.unexpectedSuccesses() != unexpectedBefore) store.recordDuplicateRefAccepted();
    }

    /// @dev The sponsor of the grant whose mark is task `mark` creates its own
    /// task referenced by the grant's digest: an ordinary task, id `refId`
    /// (taskIdFor(sponsor, digest)), recorded like any other; the mark is left as
    /// it was (the stored-hash invariant checks it).
    function _createBesideMark(address funder, ITaskEscrow.CreateParams memory p, uint256 mark, uint256 refId)
        internal
    {
        ITaskEscrow.Task memory t = _createdTask(funder, p);
        _observeStart();
        vm.prank(funder);
        uint256 id = escrow.createTask(p);
        if (id != refId || id == mark) {
            store.recordWrongRevert(
                abi.encode("a task beside a mark got another id than taskIdFor", id, refId)
            );
        }
        store.addTask(id, p.ref, t);
        _observeEnd(id, ITaskEscrow.Status.None);
        store.countCall("createBesideMark");
    }

    /*//////////////////////////////////////////////////////////////
                                OWNER
    //////////////////////////////////////////////////////////////*/

    /// @notice New dispute and appeal windows for tasks created from now on;
    /// one time in three the appeal window is zero (rulings final at once).
    function setWindows(uint256 disputeSeed, uint256 appealSeed) external instrument("setWindows") {
        uint32 disputeWindow = uint32(bound(disputeSeed, 1 minutes, 4 days));
        uint32 appealWindow = appealSeed % 3 == 0 ? 0 : uint32(bound(appealSeed, 1, 3 days));
        vm.prank(owner);
        uint32 appealRulingWindow = uint32(bound(disputeSeed >> 32, 1 minutes, 4 days));
        escrow.setWindows(disputeWindow, appealWindow, appealRulingWindow);
    }

    /// @notice Pauses or unpauses task creation.
    function togglePause() external instrument("togglePause") {
        bool paused = escrow.paused();
        vm.prank(owner);
        if (paused) escrow.unpause();
        else escrow.pause();
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    function _params(
        address funder,
        uint256 clientSeed,
        uint256 executorSeed,
        uint256 amountSeed,
        uint256 deadlineSeed
    ) internal view returns (ITaskEscrow.CreateParams memory p) {
        address client = _pickClient(clientSeed);
        // One task in four has a tiny amount, so small shares round down to zero.
        uint256 amount = amountSeed % 4 == 0 ? bound(amountSeed, 1, 100) : bound(amountSeed, 1, MAX_AMOUNT);
        p = ITaskEscrow.CreateParams({
            ref: bytes32(0),
            planId: keccak256(abi.encode("plan", clientSeed % 3)),
            parentId: store.taskCount() == 0 ? 0 : store.taskIdAt(deadlineSeed % store.taskCount()),
            capability: CAPABILITY,
            client: client,
            executor: _pickExecutor(executorSeed, funder, client),
            amount: uint128(amount),
            deadline: uint40(block.timestamp + bound(deadlineSeed, 1 hours, MAX_DEADLINE)),
            reviewWindow: 1 days,
            specURI: amountSeed % 2 == 0 ? "ipfs://spec-a" : "data:application/json,{\"spec\":\"b\"}"
        });
    }

    function _signPermit(address funder, uint256 value, uint256 deadline)
        internal
        view
        returns (uint8 v, bytes32 r, bytes32 s)
    {
        bytes32 typehash = keccak256(
            "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"
        );
        bytes32 structHash =
            keccak256(abi.encode(typehash, funder, address(escrow), value, usdc.nonces(funder), deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash));
        (v, r, s) = vm.sign(_keys[funder], digest);
    }
}
