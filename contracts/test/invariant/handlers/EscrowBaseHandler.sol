// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {TaskEscrow} from "../../../src/TaskEscrow.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {Vm} from "../../utils/Vm.sol";
import {EscrowStore} from "../stores/EscrowStore.sol";
import {BaseHandler} from "./BaseHandler.sol";

/// @notice Shared by the escrow handlers: the actors, the clock, and reading
/// what a call did from its logs into the ghost store.
abstract contract EscrowBaseHandler is BaseHandler {
    uint16 internal constant BPS = 10_000;
    /// @dev The capability every task is created for; every actor offers it.
    bytes32 internal constant CAPABILITY = "summarize";
    uint32 internal constant APPEAL_RULING_WINDOW = 4 days;

    TaskEscrow public immutable escrow;
    MockUSDC public immutable usdc;
    EscrowStore public immutable store;
    address public immutable owner;
    address public immutable arbiter;
    address public immutable appealArbiter;

    address[] internal _funders;
    mapping(address funder => uint256 key) internal _keys;
    address[] internal _clients; // clients only; funders may be clients too
    address[] internal _executors; // executors only; funders may be executors of others' tasks

    constructor(TaskEscrow escrow_, MockUSDC usdc_, EscrowStore store_, address owner_) {
        escrow = escrow_;
        usdc = usdc_;
        store = store_;
        owner = owner_;
        arbiter = escrow_.arbiter();
        appealArbiter = escrow_.appealArbiter();
        for (uint256 i; i < 3; ++i) {
            string memory n = string(abi.encodePacked("inv-funder-", bytes1(uint8(48 + i))));
            uint256 key = uint256(keccak256(bytes(n)));
            address f = vm.addr(key);
            vm.label(f, n);
            _funders.push(f);
            _keys[f] = key;
            _executors.push(_named(string(abi.encodePacked("inv-executor-", bytes1(uint8(48 + i))))));
        }
        _clients.push(_named("inv-client-0"));
        _clients.push(_named("inv-client-1"));
        // Every funder and executor offers the capability at one base unit, so
        // any of them may be hired for any amount.
        IAgentRegistry registry = IAgentRegistry(escrow_.registry());
        bytes32[] memory caps = new bytes32[](1);
        caps[0] = CAPABILITY;
        uint128[] memory prices = new uint128[](1);
        prices[0] = 1;
        // Several handlers share the actors: each registers them once.
        for (uint256 i; i < 6; ++i) {
            address agent = i < 3 ? _funders[i] : _executors[i - 3];
            if (registry.isActive(agent)) continue;
            vm.prank(agent);
            registry.register("ipfs://card", caps, prices);
        }
    }

    /// @dev Counts the call and puts the chain on the campaign clock. Also
    /// checks that the escrow call neither minted nor burned tokens.
    modifier instrument(bytes32 name) {
        store.countCall(name);
        vm.warp(store.time());
        uint256 supply = usdc.totalSupply();
        _;
        if (usdc.totalSupply() != supply) store.recordSupplyChange();
    }

    /*//////////////////////////////////////////////////////////////
                                ACTORS
    //////////////////////////////////////////////////////////////*/

    function funders() external view returns (address[] memory) {
        return _funders;
    }

    function clients() external view returns (address[] memory) {
        return _clients;
    }

    function executors() external view returns (address[] memory) {
        return _executors;
    }

    /// @dev A client: one of the two clients or (one time in three) a funder.
    function _pickClient(uint256 seed) internal view returns (address) {
        if (seed % 3 == 0) return _actor(_funders, seed / 3);
        return _actor(_clients, seed / 3);
    }

    /// @dev An executor that is neither `funder` nor `client`: an executor, or
    /// another funder (one time in four), so funders also get paid as executors.
    function _pickExecutor(uint256 seed, address funder, address client) internal view returns (address e) {
        if (seed % 4 == 0) {
            for (uint256 k; k < _funders.length; ++k) {
                e = _funders[(seed / 4 + k) % _funders.length];
                if (e != funder && e != client) return e;
            }
        }
        return _actor(_executors, seed / 4);
    }

    /*//////////////////////////////////////////////////////////////
                            TASK SELECTION
    //////////////////////////////////////////////////////////////*/

    /// @dev The first task, from a random start, that `ok` accepts.
    function _pick(uint256 seed, function(ITaskEscrow.Task memory) internal view returns (bool) ok)
        internal
        view
        returns (bool found, uint256 id, ITaskEscrow.Task memory t)
    {
        uint256 n = store.taskCount();
        if (n == 0) return (false, 0, t);
        uint256 start = seed % n;
        for (uint256 k; k < n; ++k) {
            id = store.taskIdAt((start + k) % n);
            t = store.task(id);
            if (ok(t)) return (true, id, t);
        }
        return (false, 0, t);
    }

    function _isTerminal(ITaskEscrow.Status s) internal pure returns (bool) {
        return s >= ITaskEscrow.Status.Paid;
    }

    /*//////////////////////////////////////////////////////////////
                            OBSERVATION
    //////////////////////////////////////////////////////////////*/

    /// @dev Starts recording logs; call right before the escrow call.
    function _observeStart() internal {
        vm.recordLogs();
    }

    /// @dev Reads the logs of the escrow call about task `id`, which was in
    /// status `from`: token flows in and out of the escrow, the settlement if
    /// any, and the status transition the events show.
    function _observeEnd(uint256 id, ITaskEscrow.Status from) internal {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        bool moved;
        ITaskEscrow.Status to = from;
        for (uint256 i; i < logs.length; ++i) {
            Vm.Log memory l = logs[i];
            bytes32 sig = l.topics.length == 0 ? bytes32(0) : l.topics[0];
            if (l.emitter == address(usdc)) {
                if (sig != IERC20.Transfer.selector) continue;
                address src = address(uint160(uint256(l.topics[1])));
                address dst = address(uint160(uint256(l.topics[2])));
                uint128 value = uint128(abi.decode(l.data, (uint256)));
                if (src == address(escrow)) store.recordOutflow(id, dst, value);
                if (dst == address(escrow)) store.recordInflow(id, value);
                continue;
            }
            if (l.emitter != address(escrow)) continue;
            if (sig == ITaskEscrow.TaskCreated.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Created);
            } else if (sig == ITaskEscrow.TaskAccepted.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Accepted);
            } else if (sig == ITaskEscrow.TaskCompleted.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Completed);
            } else if (sig == ITaskEscrow.TaskDisputed.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Disputed);
            } else if (sig == ITaskEscrow.DisputeRuled.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Ruled); // a TaskSettled may follow
            } else if (sig == ITaskEscrow.RulingAppealed.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Appealed);
            } else if (sig == ITaskEscrow.TaskDeclined.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Declined); // its TaskSettled follows
            } else if (sig == ITaskEscrow.TaskReassigned.selector) {
                (moved, to) = (true, ITaskEscrow.Status.Created);
            } else if (sig == ITaskEscrow.TaskSettled.selector) {
                (moved, to) = (true, ITaskEscrow.Status(uint8(uint256(l.topics[2]))));
                (uint128 toExecutor, uint128 toFunder,) = abi.decode(l.data, (uint128, uint128, uint40));
                store.recordSettlement(uint256(l.topics[1]), uint8(to), toExecutor, toFunder);
            }
        }
        if (moved) store.recordTransition(uint8(from), uint8(to));
    }

    /// @dev `t` after `_settle` with `bps` and `how`, exactly as the contract computes it.
    function _settled(ITaskEscrow.Task memory t, uint16 bps, ITaskEscrow.Settlement how)
        internal
        view
        returns (ITaskEscrow.Task memory)
    {
        uint128 toExecutor = uint128((uint256(t.amount) * bps) / BPS);
        uint128 toFunder = t.amount - toExecutor;
        if (how == ITaskEscrow.Settlement.Cancelled) t.status = ITaskEscrow.Status.Cancelled;
        else if (how == ITaskEscrow.Settlement.Expired) t.status = ITaskEscrow.Status.Expired;
        else if (how == ITaskEscrow.Settlement.Declined) t.status = ITaskEscrow.Status.Declined;
        else if (toFunder == 0) t.status = ITaskEscrow.Status.Paid;
        else if (toExecutor == 0) t.status = ITaskEscrow.Status.Refunded;
        else t.status = ITaskEscrow.Status.Split;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = bps;
        return t;
    }

    /// @dev Makes a call that must be rejected with exactly `expected`. A
    /// success or another error is recorded for the invariants to report.
    function _expectRejected(address caller, bytes memory data, bytes memory expected, uint256 id) internal {
        ITaskEscrow.Status from = store.task(id).status;
        _observeStart();
        vm.prank(caller);
        (bool ok, bytes memory ret) = address(escrow).call(data);
        if (ok) {
            store.recordUnexpectedSuccess();
            _observeEnd(id, from);
        } else {
            vm.getRecordedLogs();
            if (keccak256(ret) == keccak256(expected)) store.recordExpectedRevert();
            else store.recordWrongRevert(ret);
        }
    }

    /// @dev The task the escrow stores when `funder` creates `p` now.
    function _createdTask(address funder, ITaskEscrow.CreateParams memory p)
        internal
        view
        returns (ITaskEscrow.Task memory)
    {
        return ITaskEscrow.Task({
            funder: funder,
            client: p.client,
            executor: p.executor,
            amount: p.amount,
            deadline: p.deadline,
            updatedAt: uint40(block.timestamp),
            reviewWindow: p.reviewWindow,
            disputeWindow: escrow.disputeWindow(),
            appealWindow: escrow.appealWindow(),
            appealRulingWindow: escrow.appealRulingWindow(),
            executorShareBps: 0,
            status: ITaskEscrow.Status.Created,
            specHash: keccak256(bytes(p.specURI)),
            resultHash: bytes32(0)
        });
    }

    /// @dev Records tasks just created for `funder` from `ps` (ids `ids`) in the
    /// escrow store, as the escrow must have stored them.
    function _recordCreated(address funder, ITaskEscrow.CreateParams[] memory ps, uint256[] memory ids)
        internal
    {
        for (uint256 i; i < ps.length; ++i) {
            store.addTask(ids[i], ps[i].ref, _createdTask(funder, ps[i]));
            store.recordInflow(ids[i], ps[i].amount);
            store.recordTransition(uint8(ITaskEscrow.Status.None), uint8(ITaskEscrow.Status.Created));
        }
    }
}
