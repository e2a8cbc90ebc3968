// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";

/// @notice Ghost state of the escrow campaign, shared by the handlers and read
/// by the invariants. Each task's full {ITaskEscrow.Task} is kept exactly as
/// the contract computes it, next to what was observed on chain for it: tokens
/// in, tokens out and to whom, settlements, and every status transition.
contract EscrowStore {
    /// @dev What the handlers saw happen to one task (from events and Transfer logs).
    struct Record {
        address funder;
        bytes32 ref;
        uint128 funded; // tokens moved into the escrow when the task was created
        uint128 paidOut; // tokens moved out to the task's executor
        uint128 refunded; // tokens moved out to the task's funder
        uint128 misdirected; // tokens moved out to anyone else
        uint32 settlements; // {TaskSettled} events for the task
        uint128 settledExecutorAmount; // as carried by {TaskSettled}
        uint128 settledFunderAmount; // as carried by {TaskSettled}
        uint8 settledStatus; // as carried by {TaskSettled}
        bool mark; // a grant's mark (its task referenced by its digest): id grantMarkId, not H(funder, ref)
    }

    /// @dev One token transfer out of the escrow, attributed to the task the call was about.
    struct Outflow {
        uint256 taskId;
        address to;
        uint128 amount;
    }

    uint256 internal constant STATUS_COUNT = 13;

    /// @notice The escrow campaign's clock; handlers warp to it before each call.
    uint256 public time;

    uint256[] internal _ids;
    mapping(uint256 taskId => ITaskEscrow.Task) internal _tasks;
    mapping(uint256 taskId => Record) internal _records;
    Outflow[] internal _outflows;

    /// @notice How often a (from, to) status pair was observed on chain.
    uint256[STATUS_COUNT][STATUS_COUNT] public transitions;

    /// @notice Creations that returned an id seen before (must stay 0).
    uint256 public duplicateIds;
    /// @notice Re-creations with a used (funder, ref) that did not revert (must stay 0).
    uint256 public duplicateRefsAccepted;
    /// @notice Calls meant to be rejected that succeeded (must stay 0).
    uint256 public unexpectedSuccesses;
    /// @notice Calls meant to be rejected that reverted with another error (must stay 0).
    uint256 public wrongReverts;
    bytes public lastWrongRevert;
    /// @notice Calls meant to be rejected that were rejected with the exact error.
    uint256 public expectedReverts;
    /// @notice Escrow calls during which the token's total supply changed (must stay 0).
    uint256 public supplyChanges;

    mapping(bytes32 name => uint256) public calls;

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    function setTime(uint256 t) external {
        time = t;
    }

    function countCall(bytes32 name) external {
        calls[name] += 1;
    }

    function addTask(uint256 taskId, bytes32 ref, ITaskEscrow.Task calldata t) external {
        if (_records[taskId].funder != address(0)) {
            duplicateIds += 1;
            return;
        }
        _ids.push(taskId);
        _tasks[taskId] = t;
        _records[taskId].funder = t.funder;
        _records[taskId].ref = ref;
    }

    /// @notice Task `taskId` was created as a grant's mark: the grant's task
    /// referenced by its digest.
    function setMark(uint256 taskId) external {
        _records[taskId].mark = true;
    }

    function setTask(uint256 taskId, ITaskEscrow.Task calldata t) external {
        _tasks[taskId] = t;
    }

    function recordInflow(uint256 taskId, uint128 amount) external {
        _records[taskId].funded += amount;
    }

    function recordOutflow(uint256 taskId, address to, uint128 amount) external {
        _outflows.push(Outflow(taskId, to, amount));
        ITaskEscrow.Task storage t = _tasks[taskId];
        Record storage r = _records[taskId];
        if (to == t.funder) r.refunded += amount;
        else if (to == t.executor) r.paidOut += amount;
        else r.misdirected += amount;
    }

    function recordSettlement(uint256 taskId, uint8 status, uint128 toExecutor, uint128 toFunder) external {
        Record storage r = _records[taskId];
        r.settlements += 1;
        r.settledStatus = status;
        r.settledExecutorAmount = toExecutor;
        r.settledFunderAmount = toFunder;
    }

    function recordTransition(uint8 from, uint8 to) external {
        transitions[from][to] += 1;
    }

    function recordDuplicateRefAccepted() external {
        duplicateRefsAccepted += 1;
    }

    function recordUnexpectedSuccess() external {
        unexpectedSuccesses += 1;
    }

    function recordWrongRevert(bytes calldata data) external {
        wrongReverts += 1;
        lastWrongRevert = data;
    }

    function recordExpectedRevert() external {
        expectedReverts += 1;
    }

    function recordSupplyChange() external {
        supplyChanges += 1;
    }

    /*//////////////////////////////////////////////////////////////
                                READS
    //////////////////////////////////////////////////////////////*/

    function taskCount() external view returns (uint256) {
        return _ids.length;
    }

    function taskIdAt(uint256 i) external view returns (uint256) {
        return _ids[i];
    }

    function task(uint256 taskId) external view returns (ITaskEscrow.Task memory) {
        return _tasks[taskId];
    }

    function record(uint256 taskId) external view returns (Record memory) {
        return _records[taskId];
    }

    /// @notice Every task with its ghost state and record, in one call (the
    /// invariants run after every call, so they read the ghost in bulk).
    function all()
        external
        view
        returns (uint256[] memory ids, ITaskEscrow.Task[] memory tasks, Record[] memory records)
    {
        uint256 n = _ids.length;
        ids = _ids;
        tasks = new ITaskEscrow.Task[](n);
        records = new Record[](n);
        for (uint256 i; i < n; ++i) {
            tasks[i] = _tasks[_ids[i]];
            records[i] = _records[_ids[i]];
        }
    }

    function allTransitions() external view returns (uint256[STATUS_COUNT][STATUS_COUNT] memory) {
        return transitions;
    }

    function outflows() external view returns (Outflow[] memory) {
        return _outflows;
    }

    function outflowCount() external view returns (uint256) {
        return _outflows.length;
    }

    function outflowAt(uint256 i) external view returns (Outflow memory) {
        return _outflows[i];
    }
}
