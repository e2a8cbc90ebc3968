// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title ITaskEscrow
/// @notice Escrow for one unit of agent work: a funder locks tokens for a task, a
/// registered executor accepts and delivers, the client approves (or stays
/// silent and payment auto-releases) or disputes, and an arbiter rules. Every
/// path ends in a terminal state that holds no tokens.
///
/// @dev Storage keeps a single slot per task: the keccak256 of the ABI-encoded
/// {Task}. Callers pass the full {Task} with each call; the contract checks it
/// against the stored hash, applies the transition and stores the new hash.
/// Every transition emits an event carrying what changed, so the full {Task}
/// can be rebuilt from events alone (see contracts/README.md).
interface ITaskEscrow {
    /*//////////////////////////////////////////////////////////////
                                TYPES
    //////////////////////////////////////////////////////////////*/

    /// @notice Where a task stands. `None` means no task has that id.
    /// Terminal states: Paid, Refunded, Split, Cancelled, Expired.
    enum Status {
        None,
        Created,
        Accepted,
        Completed,
        Disputed,
        Ruled,
        Appealed,
        Paid,
        Refunded,
        Split,
        Cancelled,
        Expired
    }

    /// @notice Why a task was settled; carried by {TaskSettled}.
    enum Settlement {
        Approved, // client approved the result
        AutoReleased, // review window passed with no dispute
        Ruling, // arbiter's ruling, final at once (appeal window of zero)
        AppealRuling, // appeal arbiter's ruling
        RulingFinalized, // ruling stood: appeal window passed, or the appeal went undecided
        DisputeDefault, // arbiter never ruled before the dispute deadline: refund
        Cancelled, // client cancelled before acceptance
        Expired // deadline passed before completion
    }

    /// @notice The whole state of a task. Its keccak256 is all the contract stores.
    struct Task {
        address funder; // paid the escrow; every refund goes here
        address client; // approves, disputes, cancels, reassigns
        address executor; // the agent assigned to do the work
        uint128 amount; // escrowed token amount
        uint40 deadline; // executor must complete by this time
        uint40 updatedAt; // when the current status began; starts review, dispute and appeal windows
        uint32 reviewWindow; // seconds the client has to approve or dispute a completed task
        uint32 disputeWindow; // seconds the arbiter has to rule on a dispute (snapshot at creation)
        uint32 appealWindow; // seconds to appeal a ruling (snapshot at creation); zero makes rulings final
        uint32 appealRulingWindow; // seconds the appeal arbiter has to rule on an appeal (snapshot at
        // creation)
        uint16 executorShareBps; // the ruling while Ruled or Appealed; once settled, the share applied
        Status status;
        bytes32 specHash; // keccak256 of the spec URI
        bytes32 resultHash; // keccak256 of the result URI, once completed
    }

    /// @notice What a funder supplies to create a task.
    struct CreateParams {
        bytes32 ref; // caller-chosen reference; the task id derives from (funder, ref)
        bytes32 planId; // the plan this task belongs to (0 for none)
        uint256 parentId; // the parent task id (0 for a root task)
        bytes32 capability; // what the executor is hired for; it must offer it at no more than `amount`
        address client;
        address executor;
        uint128 amount;
        uint40 deadline;
        uint32 reviewWindow;
        string specURI; // the spec envelope; only its hash is stored
    }

    /*//////////////////////////////////////////////////////////////
                                EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A task was created and funded. `task` is the full initial state.
    event TaskCreated(
        uint256 indexed taskId,
        bytes32 indexed planId,
        uint256 indexed parentId,
        bytes32 ref,
        bytes32 capability,
        Task task,
        string specURI
    );

    /// @notice The executor accepted the task.
    event TaskAccepted(uint256 indexed taskId, address indexed executor, uint40 at);

    /// @notice The executor delivered; the review window starts at `at`. The stored
    /// result hash is `keccak256(bytes(resultURI))`. Emitted by {completeTask} from
    /// Accepted and by {deliver} straight from Created.
    event TaskCompleted(uint256 indexed taskId, address indexed executor, string resultURI, uint40 at);

    /// @notice The client disputed the result; the dispute window starts at `at`.
    event TaskDisputed(uint256 indexed taskId, address indexed client, string reasonURI, uint40 at);

    /// @notice The arbiter ruled. With a non-zero appeal window the ruling can be
    /// appealed until `at + appealWindow`; otherwise {TaskSettled} follows at once.
    event DisputeRuled(
        uint256 indexed taskId,
        address indexed arbiter,
        uint16 executorShareBps,
        string rationaleURI,
        uint40 at
    );

    /// @notice A party appealed the ruling to the appeal arbiter.
    event RulingAppealed(uint256 indexed taskId, address indexed appellant, string reasonURI, uint40 at);

    /// @notice The appeal arbiter ruled; {TaskSettled} follows.
    event AppealRuled(
        uint256 indexed taskId,
        address indexed appealArbiter,
        uint16 executorShareBps,
        string rationaleURI,
        uint40 at
    );

    /// @notice The task was re-routed to another executor with a new deadline.
    event TaskReassigned(
        uint256 indexed taskId,
        address indexed previousExecutor,
        address indexed newExecutor,
        uint40 newDeadline,
        uint40 at
    );

    /// @notice The task reached a terminal `status`; the escrow paid
    /// `executorAmount` to the executor and `funderAmount` to the funder.
    event TaskSettled(
        uint256 indexed taskId,
        Status indexed status,
        Settlement indexed settlement,
        uint128 executorAmount,
        uint128 funderAmount,
        uint40 at
    );

    /// @notice The owner proposed a new arbiter, who must accept.
    event ArbiterProposed(address indexed current, address indexed proposed);
    /// @notice The arbiter changed.
    event ArbiterChanged(address indexed previous, address indexed current);
    /// @notice The owner proposed a new appeal arbiter, who must accept.
    event AppealArbiterProposed(address indexed current, address indexed proposed);
    /// @notice The appeal arbiter changed.
    event AppealArbiterChanged(address indexed previous, address indexed current);
    /// @notice The windows for tasks created from now on changed.
    event WindowsUpdated(uint32 disputeWindow, uint32 appealWindow, uint32 appealRulingWindow);

    /*//////////////////////////////////////////////////////////////
                                ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice No task has this id.
    error TaskEscrowUnknownTask(uint256 taskId);
    /// @notice The supplied task does not match the stored hash (stale or forged).
    error TaskEscrowStaleTask(uint256 taskId);
    /// @notice This funder already used this reference.
    error TaskEscrowDuplicateReference(address funder, bytes32 ref);
    /// @notice The task is not in a status that allows this call.
    error TaskEscrowInvalidStatus(uint256 taskId, Status status);
    /// @notice The caller does not hold the role this call needs.
    error TaskEscrowUnauthorized(address caller);
    /// @notice The amount is zero.
    error TaskEscrowZeroAmount();
    /// @notice An address parameter is the zero address.
    error TaskEscrowZeroAddress();
    /// @notice The executor is also the client or the funder.
    error TaskEscrowSelfDealing(address executor);
    /// @notice The deadline is not in the future, or too far in it.
    error TaskEscrowInvalidDeadline(uint40 deadline);
    /// @notice A window is outside its allowed range.
    error TaskEscrowInvalidWindow(uint32 window);
    /// @notice A share is above 10,000 basis points.
    error TaskEscrowInvalidShare(uint16 executorShareBps);
    /// @notice The call came too early (a window or deadline has not passed yet).
    error TaskEscrowTooEarly(uint256 notBefore);
    /// @notice The call came too late (a window or deadline has passed).
    error TaskEscrowTooLate(uint256 notAfter);
    /// @notice The token moved a different amount than asked (e.g. a fee-on-transfer token).
    error TaskEscrowTransferMismatch(uint256 expected, uint256 received);
    /// @notice The caller is not the pending arbiter or appeal arbiter.
    error TaskEscrowNotPending(address caller);
    /// @notice The executor is not registered and active, does not offer the capability,
    /// or asks more for it than the task's amount.
    error TaskEscrowExecutorNotOffering(address executor, bytes32 capability, uint128 amount);
    /// @notice A batch is empty or longer than {MAX_BATCH}.
    error TaskEscrowBatchSize(uint256 length);
    /// @notice Two arrays of a batch call differ in length.
    error TaskEscrowLengthMismatch(uint256 ids, uint256 tasks);
    /// @notice Item `index` of a batch reuses a reference: the whole batch reverts,
    /// nothing is funded.
    error TaskEscrowBatchDuplicate(uint256 index, bytes32 ref);

    /*//////////////////////////////////////////////////////////////
                            CREATION
    //////////////////////////////////////////////////////////////*/

    /// @notice Creates a task funded from the caller's prior token approval.
    /// @return taskId `taskIdFor(msg.sender, p.ref)`.
    function createTask(CreateParams calldata p) external returns (uint256 taskId);

    /// @notice Creates a task in one transaction, approving the transfer with an
    /// EIP-2612 permit signed by the caller. A permit already used (e.g. front-run)
    /// is tolerated when the allowance suffices.
    function createTaskWithPermit(
        CreateParams calldata p,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256 taskId);

    /// @notice Creates every task of `ps` with one token transfer for their sum, from
    /// the caller's prior approval: a wave of a plan in one transaction. All or
    /// nothing: an invalid item reverts the batch, a reused reference with
    /// {TaskEscrowBatchDuplicate} naming its index, so a crashed caller re-sending
    /// the batch can never fund a task twice.
    /// @return taskIds `taskIdFor(msg.sender, ps[i].ref)` for each item, in order.
    function createTasks(CreateParams[] calldata ps) external returns (uint256[] memory taskIds);

    /// @notice {createTasks} approved by one EIP-2612 permit for the sum of the amounts.
    function createTasksWithPermit(
        CreateParams[] calldata ps,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256[] memory taskIds);

    /*//////////////////////////////////////////////////////////////
                            LIFECYCLE
    //////////////////////////////////////////////////////////////*/

    /// @notice The executor accepts a Created task before its deadline.
    function acceptTask(uint256 taskId, Task calldata task) external;

    /// @notice The executor delivers an Accepted task before its deadline.
    function completeTask(uint256 taskId, Task calldata task, string calldata resultURI) external;

    /// @notice The executor delivers a Created task before its deadline, accepting and
    /// completing it in one call (work done before it was accepted).
    function deliver(uint256 taskId, Task calldata task, string calldata resultURI) external;

    /// @notice The client approves a Completed task; the executor is paid.
    function approvePayment(uint256 taskId, Task calldata task) external;

    /// @notice The client approves several Completed tasks at once; all or nothing.
    function approvePayments(uint256[] calldata taskIds, Task[] calldata tasks) external;

    /// @notice Anyone releases payment of a Completed task once its review window passed.
    function releasePayment(uint256 taskId, Task calldata task) external;

    /// @notice The client disputes a Completed task within its review window.
    function disputeTask(uint256 taskId, Task calldata task, string calldata reasonURI) external;

    /// @notice The arbiter rules on a Disputed task within its dispute window.
    /// `executorShareBps` of the amount goes to the executor, the rest to the funder.
    function resolveDispute(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external;

    /// @notice The client or the executor appeals a ruling within the appeal window.
    function appealRuling(uint256 taskId, Task calldata task, string calldata reasonURI) external;

    /// @notice The appeal arbiter rules on an appealed task within its dispute window; final.
    function resolveAppeal(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external;

    /// @notice Anyone settles a ruling that stands: after the appeal window with no
    /// appeal, or after an appeal the appeal arbiter left undecided past its window.
    function finalizeRuling(uint256 taskId, Task calldata task) external;

    /// @notice Anyone refunds the funder of a dispute left unruled past its window.
    function claimDisputeDefault(uint256 taskId, Task calldata task) external;

    /// @notice Anyone refunds the funder of a Created or Accepted task past its deadline.
    function refundExpired(uint256 taskId, Task calldata task) external;

    /// @notice The client cancels a task nobody accepted; the funder is refunded.
    function cancelTask(uint256 taskId, Task calldata task) external;

    /// @notice The client re-routes a task its executor never accepted, or accepted
    /// and let pass its deadline, to `newExecutor` with `newDeadline`.
    function reassignTask(
        uint256 taskId,
        Task calldata task,
        address newExecutor,
        uint40 newDeadline,
        bytes32 capability
    ) external;

    /*//////////////////////////////////////////////////////////////
                                ADMIN
    //////////////////////////////////////////////////////////////*/

    /// @notice Owner: stop new tasks. Everything else keeps working.
    function pause() external;

    /// @notice Owner: allow new tasks again.
    function unpause() external;

    /// @notice Owner: propose a new arbiter; takes effect when it calls {acceptArbiter}.
    function proposeArbiter(address newArbiter) external;

    /// @notice The proposed arbiter takes the role.
    function acceptArbiter() external;

    /// @notice Owner: propose a new appeal arbiter; takes effect on {acceptAppealArbiter}.
    function proposeAppealArbiter(address newAppealArbiter) external;

    /// @notice The proposed appeal arbiter takes the role.
    function acceptAppealArbiter() external;

    /// @notice Owner: set the windows snapshotted into new tasks.
    function setWindows(uint32 newDisputeWindow, uint32 newAppealWindow, uint32 newAppealRulingWindow)
        external;

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The settlement token.
    function token() external view returns (address);

    /// @notice The current arbiter.
    function arbiter() external view returns (address);

    /// @notice The arbiter proposed and not yet accepted (zero if none).
    function pendingArbiter() external view returns (address);

    /// @notice The current appeal arbiter.
    function appealArbiter() external view returns (address);

    /// @notice The appeal arbiter proposed and not yet accepted (zero if none).
    function pendingAppealArbiter() external view returns (address);

    /// @notice Dispute window snapshotted into new tasks, in seconds.
    function disputeWindow() external view returns (uint32);

    /// @notice Appeal window snapshotted into new tasks, in seconds; zero makes rulings final.
    function appealWindow() external view returns (uint32);

    /// @notice Appeal ruling window snapshotted into new tasks, in seconds.
    function appealRulingWindow() external view returns (uint32);

    /// @notice The registry every executor must be registered, active and offering in.
    function registry() external view returns (address);

    /// @notice The stored hash of a task's state (zero if no such task).
    function taskHash(uint256 taskId) external view returns (bytes32);

    /// @notice The hash {taskHash} holds for `task`.
    function hashTask(Task calldata task) external pure returns (bytes32);

    /// @notice Most tasks one {createTasks} or {approvePayments} call takes.
    function MAX_BATCH() external view returns (uint256);

    /// @notice The id a task created by `funder` with reference `ref` gets.
    function taskIdFor(address funder, bytes32 ref) external pure returns (uint256);
}
