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
    /// Terminal states: Paid, Refunded, Split, Cancelled, Expired, Declined.
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
        Expired,
        Declined
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
        Expired, // deadline passed before completion
        Declined // the executor said no before delivering
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

    /// @notice A sponsor's signed budget for one plan: the named operator may
    /// create that plan's tasks with the sponsor as funder, up to `budget` in all,
    /// until `validUntil`, unless the sponsor revokes it first. Signed as EIP-712
    /// typed data over this contract's domain (name "Tessera TaskEscrow", version
    /// "1", this chain, this contract), by an EOA (ECDSA) or a contract (ERC-1271).
    struct Grant {
        address sponsor; // funds the tasks; gets every refund
        bytes32 planId; // every task created under the grant carries this plan id
        address operator; // the one caller that may spend the grant
        uint128 budget; // the most the grant may ever fund, in token units
        uint40 validUntil; // last second the grant may fund a task
        uint256 nonce; // tells apart grants that are otherwise the same
    }

    /// @notice Tasks to create under one grant, with the sponsor's signature of it.
    struct GrantedBatch {
        Grant grant;
        bytes signature; // 65-byte ECDSA (r, s, v), or whatever the sponsor's ERC-1271 contract accepts
        CreateParams[] params;
    }

    /*//////////////////////////////////////////////////////////////
                                EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A task was created and funded.
    /// @dev Carries everything an indexer needs to rebuild the task without a call:
    /// the full initial {Task} and the spec URI whose hash it stores.
    /// @param taskId `taskIdFor(task.funder, ref)`.
    /// @param planId The plan the task belongs to (0 for none); not stored.
    /// @param parentId The parent task id (0 for a root task); not stored, not checked.
    /// @param ref The funder's reference the id derives from.
    /// @param capability What the executor was hired for, as checked against the registry.
    /// @param task The full initial state; its hash is what {taskHash} holds.
    /// @param specURI The spec envelope; `task.specHash == keccak256(bytes(specURI))`.
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
    /// @dev Only the executor accepts; the deadline does not change.
    /// @param taskId The task.
    /// @param executor The executor, who called.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskAccepted(uint256 indexed taskId, address indexed executor, uint40 at);

    /// @notice The executor delivered; the review window starts at `at`.
    /// @dev Emitted by {completeTask} from Accepted and by {deliver} straight from
    /// Created. The stored result hash is `keccak256(bytes(resultURI))`.
    /// @param taskId The task.
    /// @param executor The executor, who called.
    /// @param resultURI Where the result is.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskCompleted(uint256 indexed taskId, address indexed executor, string resultURI, uint40 at);

    /// @notice The client disputed the result; the dispute window starts at `at`.
    /// @dev The funds stay escrowed until a ruling or {claimDisputeDefault}.
    /// @param taskId The task.
    /// @param client The client, who called.
    /// @param reasonURI Why the client disputes; only emitted, never stored.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskDisputed(uint256 indexed taskId, address indexed client, string reasonURI, uint40 at);

    /// @notice The arbiter ruled.
    /// @dev With a non-zero appeal window the ruling can be appealed until
    /// `at + appealWindow`; otherwise {TaskSettled} follows in the same call.
    /// @param taskId The task.
    /// @param arbiter The arbiter, who called.
    /// @param executorShareBps The executor's share of the amount, in basis points.
    /// @param rationaleURI The council's reasoning; only emitted, never stored.
    /// @param at The block time, now the task's `updatedAt`.
    event DisputeRuled(
        uint256 indexed taskId,
        address indexed arbiter,
        uint16 executorShareBps,
        string rationaleURI,
        uint40 at
    );

    /// @notice A party appealed the ruling to the appeal arbiter.
    /// @dev The standing ruling is kept in the task and applies if the appeal goes undecided.
    /// @param taskId The task.
    /// @param appellant The client or the executor, who called.
    /// @param reasonURI Why the party appeals; only emitted, never stored.
    /// @param at The block time, now the task's `updatedAt`; the appeal ruling window starts.
    event RulingAppealed(uint256 indexed taskId, address indexed appellant, string reasonURI, uint40 at);

    /// @notice The appeal arbiter ruled; {TaskSettled} follows in the same call.
    /// @dev Replaces the standing ruling; there is no further appeal.
    /// @param taskId The task.
    /// @param appealArbiter The appeal arbiter, who called.
    /// @param executorShareBps The executor's share of the amount, in basis points; final.
    /// @param rationaleURI The appeal's reasoning; only emitted, never stored.
    /// @param at The block time, now the task's `updatedAt`.
    event AppealRuled(
        uint256 indexed taskId,
        address indexed appealArbiter,
        uint16 executorShareBps,
        string rationaleURI,
        uint40 at
    );

    /// @notice The executor declined the task; {TaskSettled} (Declined, Declined)
    /// follows in the same call and refunds the funder in full.
    /// @dev Emitted by {declineTask} from Created or Accepted, up to the deadline.
    /// @param taskId The task.
    /// @param executor The executor, who called.
    /// @param reasonURI Why the executor declines; only emitted, never stored.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskDeclined(uint256 indexed taskId, address indexed executor, string reasonURI, uint40 at);

    /// @notice The task was re-routed to another executor with a new deadline.
    /// @dev The task is Created again; the funder, client and amount are unchanged.
    /// @param taskId The task.
    /// @param previousExecutor The executor taken off the task.
    /// @param newExecutor The executor now assigned.
    /// @param newDeadline The new deadline.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskReassigned(
        uint256 indexed taskId,
        address indexed previousExecutor,
        address indexed newExecutor,
        uint40 newDeadline,
        uint40 at
    );

    /// @notice The task reached a terminal status and the escrow paid it out.
    /// @dev `executorAmount + funderAmount` is the task's amount: a settled task holds
    /// no tokens.
    /// @param taskId The task.
    /// @param status The terminal status: Paid, Refunded, Split, Cancelled, Expired or Declined.
    /// @param settlement Why the task was settled.
    /// @param executorAmount Tokens sent to the executor.
    /// @param funderAmount Tokens sent back to the funder.
    /// @param rating The client's rating of the work in an approval (Approved), 0 to
    /// 100 percent: the feedback that travels with the payment. Zero for every other
    /// settlement, whose shares say what the work was judged worth.
    /// @param at The block time, now the task's `updatedAt`.
    event TaskSettled(
        uint256 indexed taskId,
        Status indexed status,
        Settlement indexed settlement,
        uint128 executorAmount,
        uint128 funderAmount,
        uint8 rating,
        uint40 at
    );

    /// @notice The owner proposed a new arbiter, who must accept.
    /// @dev Nothing changes until the proposed arbiter calls {acceptArbiter}.
    /// @param current The arbiter until the proposed one accepts.
    /// @param proposed The proposed arbiter.
    event ArbiterProposed(address indexed current, address indexed proposed);

    /// @notice The arbiter changed.
    /// @dev Also emitted at deployment, with `previous` zero.
    /// @param previous The former arbiter (zero at deployment).
    /// @param current The arbiter from now on.
    event ArbiterChanged(address indexed previous, address indexed current);

    /// @notice The owner proposed a new appeal arbiter, who must accept.
    /// @dev Nothing changes until the proposed appeal arbiter calls {acceptAppealArbiter}.
    /// @param current The appeal arbiter until the proposed one accepts.
    /// @param proposed The proposed appeal arbiter.
    event AppealArbiterProposed(address indexed current, address indexed proposed);

    /// @notice The appeal arbiter changed.
    /// @dev Also emitted at deployment, with `previous` zero.
    /// @param previous The former appeal arbiter (zero at deployment).
    /// @param current The appeal arbiter from now on.
    event AppealArbiterChanged(address indexed previous, address indexed current);

    /// @notice The windows for tasks created from now on changed; existing tasks
    /// keep the windows they were created with.
    /// @dev Also emitted at deployment.
    /// @param disputeWindow Seconds the arbiter has to rule on a dispute.
    /// @param appealWindow Seconds a party has to appeal a ruling; zero makes rulings final.
    /// @param appealRulingWindow Seconds the appeal arbiter has to rule on an appeal.
    event WindowsUpdated(uint32 disputeWindow, uint32 appealWindow, uint32 appealRulingWindow);

    /// @notice Tasks were created under a grant.
    /// @dev Emitted once per batch of {createWithGrants}, after its {TaskCreated}
    /// events; `spent` is the grant's running total, so the last one is its state.
    /// @param digest The grant's EIP-712 digest ({grantDigest}).
    /// @param sponsor The grant's sponsor, the tasks' funder.
    /// @param planId The grant's plan.
    /// @param spent What the grant has funded in all, this creation included.
    event GrantSpent(bytes32 indexed digest, address indexed sponsor, bytes32 indexed planId, uint128 spent);

    /// @notice A sponsor revoked a grant; it funds nothing more.
    /// @dev Tasks it funded before are unaffected.
    /// @param digest The grant's EIP-712 digest.
    /// @param sponsor The grant's sponsor.
    /// @param planId The grant's plan.
    event GrantRevoked(bytes32 indexed digest, address indexed sponsor, bytes32 indexed planId);

    /*//////////////////////////////////////////////////////////////
                                ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @notice No task has this id.
    /// @param taskId The id asked for.
    error TaskEscrowUnknownTask(uint256 taskId);

    /// @notice The supplied task does not match the stored hash (stale or forged).
    /// @param taskId The id asked for; rebuild its {Task} from events and retry.
    error TaskEscrowStaleTask(uint256 taskId);

    /// @notice This funder already used this reference.
    /// @param funder The caller.
    /// @param ref The reference already used.
    error TaskEscrowDuplicateReference(address funder, bytes32 ref);

    /// @notice The task is not in a status that allows this call.
    /// @param taskId The task.
    /// @param status Where it stands.
    error TaskEscrowInvalidStatus(uint256 taskId, Status status);

    /// @notice The caller does not hold the role this call needs.
    /// @param caller The caller.
    error TaskEscrowUnauthorized(address caller);

    /// @notice The amount is zero.
    error TaskEscrowZeroAmount();

    /// @notice An address parameter is the zero address.
    error TaskEscrowZeroAddress();

    /// @notice The executor is also the client or the funder.
    /// @param executor The executor named.
    error TaskEscrowSelfDealing(address executor);

    /// @notice The deadline is not in the future, or more than a year in it.
    /// @param deadline The deadline given.
    error TaskEscrowInvalidDeadline(uint40 deadline);

    /// @notice A window is outside its allowed range (one minute to 30 days; an
    /// appeal window may also be zero).
    /// @param window The window given, in seconds.
    error TaskEscrowInvalidWindow(uint32 window);

    /// @notice A share is above 10,000 basis points.
    /// @param executorShareBps The share given.
    error TaskEscrowInvalidShare(uint16 executorShareBps);

    /// @notice The call came too early (a window or deadline has not passed yet).
    /// @param notBefore The first timestamp at which the call can succeed.
    error TaskEscrowTooEarly(uint256 notBefore);

    /// @notice The call came too late (a window or deadline has passed).
    /// @param notAfter The last timestamp at which the call could have succeeded.
    error TaskEscrowTooLate(uint256 notAfter);

    /// @notice The token moved a different amount than asked (e.g. a fee-on-transfer token).
    /// @param expected The amount asked for.
    /// @param received The amount the escrow's balance grew by.
    error TaskEscrowTransferMismatch(uint256 expected, uint256 received);

    /// @notice The caller is not the pending arbiter or appeal arbiter.
    /// @param caller The caller.
    error TaskEscrowNotPending(address caller);

    /// @notice The executor is not registered and active, does not offer the capability,
    /// or asks more for it than the task's amount.
    /// @param executor The executor named.
    /// @param capability The capability it was to be hired for.
    /// @param amount The task's amount.
    error TaskEscrowExecutorNotOffering(address executor, bytes32 capability, uint128 amount);

    /// @notice A batch is empty or longer than {MAX_BATCH}.
    /// @param length The batch's length.
    error TaskEscrowBatchSize(uint256 length);

    /// @notice Two arrays of a batch call differ in length.
    /// @param ids The number of task ids.
    /// @param tasks The number of tasks.
    error TaskEscrowLengthMismatch(uint256 ids, uint256 tasks);

    /// @notice An item of a batch reuses a reference: the whole batch reverts,
    /// nothing is funded.
    /// @param index The position of the item in the batch.
    /// @param ref The reference it reuses (earlier in the batch or in an earlier call).
    error TaskEscrowBatchDuplicate(uint256 index, bytes32 ref);

    /// @notice The caller is not the grant's operator.
    /// @param caller The caller.
    error TaskEscrowGrantOperator(address caller);

    /// @notice The grant's signature is not the sponsor's.
    /// @param digest The grant's EIP-712 digest.
    error TaskEscrowGrantSignature(bytes32 digest);

    /// @notice The grant is past its `validUntil`.
    /// @param validUntil Its last valid second.
    error TaskEscrowGrantExpired(uint40 validUntil);

    /// @notice The sponsor revoked the grant.
    /// @param digest The grant's EIP-712 digest.
    error TaskEscrowGrantRevoked(bytes32 digest);

    /// @notice A task of a granted batch belongs to another plan than the grant's.
    /// @param index The position of the task in the batch.
    /// @param planId The task's plan.
    error TaskEscrowGrantPlan(uint256 index, bytes32 planId);

    /// @notice The creation would take the grant past its budget.
    /// @param digest The grant's EIP-712 digest.
    /// @param budget Its budget.
    /// @param wouldSpend What it would have funded in all.
    error TaskEscrowGrantBudget(bytes32 digest, uint128 budget, uint256 wouldSpend);

    /// @notice Only a grant's sponsor may revoke it.
    /// @param caller The caller.
    error TaskEscrowGrantNotSponsor(address caller);

    /// @notice The grant was used in full by a first use that created its mark.
    /// @param digest The grant's EIP-712 digest.
    error TaskEscrowGrantUsed(bytes32 digest);

    /// @notice An approval's rating is above {MAX_RATING}.
    /// @param rating The rating given.
    error TaskEscrowInvalidRating(uint8 rating);

    /*//////////////////////////////////////////////////////////////
                            CREATION
    //////////////////////////////////////////////////////////////*/

    /// @notice Creates a task funded from the caller's prior token approval.
    /// @dev Reverts while paused; if an amount, address, deadline or review window is
    /// invalid; if the executor is the caller or the client
    /// ({TaskEscrowSelfDealing}) or does not offer `p.capability` at no more than
    /// `p.amount` ({TaskEscrowExecutorNotOffering}); if the caller already used
    /// `p.ref` ({TaskEscrowDuplicateReference}); or if the transfer moves another
    /// amount than `p.amount` ({TaskEscrowTransferMismatch}). Emits {TaskCreated}.
    /// @param p The task to create; the caller is its funder.
    /// @return taskId `taskIdFor(msg.sender, p.ref)`.
    function createTask(CreateParams calldata p) external returns (uint256 taskId);

    /// @notice Creates a task in one transaction, approving the transfer with an
    /// EIP-2612 permit signed by the caller.
    /// @dev A permit that fails (already used, e.g. front-run) is tolerated: the
    /// transfer then succeeds if the allowance suffices. Otherwise as {createTask}.
    /// @param p The task to create; the caller is its funder.
    /// @param permitDeadline The permit's deadline.
    /// @param v The permit signature's recovery id.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    /// @return taskId `taskIdFor(msg.sender, p.ref)`.
    function createTaskWithPermit(
        CreateParams calldata p,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256 taskId);

    /// @notice Creates every task of `ps` with one token transfer for their sum, from
    /// the caller's prior approval: a wave of a plan in one transaction.
    /// @dev All or nothing: any item that {createTask} would reject reverts the
    /// batch; a reference reused within the batch or used before reverts with
    /// {TaskEscrowBatchDuplicate} naming its index, so a crashed caller re-sending
    /// the batch can never fund a task twice. Emits one {TaskCreated} per item, in order.
    /// @param ps The tasks, 1 to {MAX_BATCH} of them ({TaskEscrowBatchSize}).
    /// @return taskIds `taskIdFor(msg.sender, ps[i].ref)` for each item, in order.
    function createTasks(CreateParams[] calldata ps) external returns (uint256[] memory taskIds);

    /// @notice {createTasks} approved by one EIP-2612 permit for the sum of the amounts.
    /// @dev A permit that fails is tolerated as in {createTaskWithPermit}.
    /// @param ps The tasks, 1 to {MAX_BATCH} of them.
    /// @param permitDeadline The permit's deadline.
    /// @param v The permit signature's recovery id.
    /// @param r The permit signature's `r`.
    /// @param s The permit signature's `s`.
    /// @return taskIds `taskIdFor(msg.sender, ps[i].ref)` for each item, in order.
    function createTasksWithPermit(
        CreateParams[] calldata ps,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (uint256[] memory taskIds);

    /// @notice Creates tasks under sponsors' signed grants, each batch funded by its
    /// grant's sponsor from the sponsor's token allowance to this contract.
    /// @dev For each batch: reverts while paused; unless the caller is the grant's
    /// operator ({TaskEscrowGrantOperator}); after `validUntil`
    /// ({TaskEscrowGrantExpired}); once revoked ({TaskEscrowGrantRevoked}); if the
    /// signature is not the sponsor's over {grantDigest} ({TaskEscrowGrantSignature};
    /// checked on a grant's first use, ECDSA or ERC-1271); if a task names another
    /// plan ({TaskEscrowGrantPlan}); if the grant would fund more than its budget in
    /// all ({TaskEscrowGrantBudget}); if the executor is the caller, the client or the
    /// sponsor ({TaskEscrowSelfDealing}); and for every check of {createTasks}.
    /// A task of a grant whose reference is the grant's digest is the grant's mark,
    /// with id {grantMarkId} (not `taskIdFor`), which no other creation can make. A
    /// first use that creates the mark and spends the whole budget writes no state
    /// for the grant (it is used up: a replay would have to create the mark again);
    /// once the mark exists, a grant with no recorded spending reverts with
    /// {TaskEscrowGrantUsed}.
    /// Emits {TaskCreated} per task, then {GrantSpent} per batch unless that batch
    /// was such a first use.
    /// @param batches The grants, their signatures and their tasks (at most
    /// {MAX_BATCH} tasks in all).
    /// @return taskIds `taskIdFor(grant.sponsor, ref)` of every task, in order (a
    /// mark's: {grantMarkId}).
    function createWithGrants(GrantedBatch[] calldata batches) external returns (uint256[] memory taskIds);

    /// @notice Revokes a grant: it funds no task from now on. Tasks it already funded
    /// are unaffected, and their refunds still go to the sponsor.
    /// @dev Reverts unless the caller is the grant's sponsor
    /// ({TaskEscrowGrantNotSponsor}) or if it is already revoked
    /// ({TaskEscrowGrantRevoked}). Works on a grant never used. Emits {GrantRevoked}.
    /// @param grant The grant to revoke.
    function revokeGrant(Grant calldata grant) external;

    /*//////////////////////////////////////////////////////////////
                            LIFECYCLE
    //////////////////////////////////////////////////////////////*/

    // Every call below takes the task's id and its full current state `task`,
    // checked against the stored hash: an unknown id reverts with
    // {TaskEscrowUnknownTask}, a state that does not match with {TaskEscrowStaleTask}.

    /// @notice The executor accepts a Created task before its deadline.
    /// @dev Reverts unless the caller is the executor, the task is Created and the
    /// deadline has not passed. Emits {TaskAccepted}.
    /// @param taskId The task.
    /// @param task Its current state.
    function acceptTask(uint256 taskId, Task calldata task) external;

    /// @notice The executor delivers an Accepted task before its deadline.
    /// @dev Reverts unless the caller is the executor, the task is Accepted and the
    /// deadline has not passed. Starts the review window. Emits {TaskCompleted}.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param resultURI Where the result is; only its hash is stored.
    function completeTask(uint256 taskId, Task calldata task, string calldata resultURI) external;

    /// @notice The executor delivers a Created task before its deadline, accepting and
    /// completing it in one call (work done before it was accepted).
    /// @dev As {completeTask}, but from Created. Emits {TaskCompleted} only.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param resultURI Where the result is; only its hash is stored.
    function deliver(uint256 taskId, Task calldata task, string calldata resultURI) external;

    /// @notice The client approves a Completed task; the executor is paid in full.
    /// @dev Reverts unless the caller is the client and the task is Completed; the
    /// review window need not have ended; reverts with {TaskEscrowInvalidRating} if
    /// `rating` is above {MAX_RATING}. Emits {TaskSettled} (Paid, Approved, `rating`).
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param rating The client's rating of the work, 0 to 100 percent.
    function approvePayment(uint256 taskId, Task calldata task, uint8 rating) external;

    /// @notice The client approves several Completed tasks at once; all or nothing.
    /// @dev Each item as {approvePayment}. Emits one {TaskSettled} per task, in order.
    /// Consecutive items of one executor are paid in one token transfer (order a
    /// batch by executor to pay each once).
    /// @param taskIds The tasks, 1 to {MAX_BATCH} of them ({TaskEscrowBatchSize}).
    /// @param tasks Their current states, one per id ({TaskEscrowLengthMismatch}).
    /// @param ratings The client's rating of each, one per id ({TaskEscrowLengthMismatch}).
    function approvePayments(uint256[] calldata taskIds, Task[] calldata tasks, uint8[] calldata ratings)
        external;

    /// @notice Anyone releases payment of a Completed task once its review window passed.
    /// @dev Reverts with {TaskEscrowTooEarly} until `updatedAt + reviewWindow` has
    /// passed. Emits {TaskSettled} (Paid, AutoReleased).
    /// @param taskId The task.
    /// @param task Its current state.
    function releasePayment(uint256 taskId, Task calldata task) external;

    /// @notice The client disputes a Completed task within its review window.
    /// @dev Reverts unless the caller is the client, the task is Completed and the
    /// review window is open. Starts the dispute window. Emits {TaskDisputed}.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param reasonURI Why the client disputes; only emitted.
    function disputeTask(uint256 taskId, Task calldata task, string calldata reasonURI) external;

    /// @notice The arbiter rules on a Disputed task within its dispute window.
    /// `executorShareBps` of the amount goes to the executor, the rest to the funder.
    /// @dev Reverts unless the caller is the arbiter, the task is Disputed, the
    /// dispute window is open and the share is at most 10,000. With a zero appeal
    /// window the ruling is final: {DisputeRuled} then {TaskSettled} (Ruling).
    /// Otherwise the task becomes Ruled and the appeal window starts: {DisputeRuled}.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param executorShareBps The executor's share in basis points (0 to 10,000).
    /// @param rationaleURI The council's reasoning; only emitted.
    function resolveDispute(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external;

    /// @notice The client or the executor appeals a ruling within the appeal window.
    /// @dev Reverts unless the caller is the client or the executor, the task is
    /// Ruled and the appeal window is open. Starts the appeal ruling window.
    /// Emits {RulingAppealed}.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param reasonURI Why the party appeals; only emitted.
    function appealRuling(uint256 taskId, Task calldata task, string calldata reasonURI) external;

    /// @notice The appeal arbiter rules on an appealed task within its appeal ruling
    /// window; the ruling is final.
    /// @dev Reverts unless the caller is the appeal arbiter, the task is Appealed, the
    /// appeal ruling window is open and the share is at most 10,000. Emits
    /// {AppealRuled} then {TaskSettled} (AppealRuling).
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param executorShareBps The executor's share in basis points (0 to 10,000).
    /// @param rationaleURI The appeal's reasoning; only emitted.
    function resolveAppeal(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external;

    /// @notice Anyone settles a ruling that stands: after the appeal window with no
    /// appeal, or after an appeal the appeal arbiter left undecided past its window.
    /// @dev Reverts unless the task is Ruled or Appealed, and with {TaskEscrowTooEarly}
    /// while the window that applies is open. Settles at the standing share.
    /// Emits {TaskSettled} (RulingFinalized).
    /// @param taskId The task.
    /// @param task Its current state.
    function finalizeRuling(uint256 taskId, Task calldata task) external;

    /// @notice Anyone refunds the funder of a dispute left unruled past its window.
    /// @dev Reverts unless the task is Disputed, and with {TaskEscrowTooEarly} while
    /// the dispute window is open. Emits {TaskSettled} (Refunded, DisputeDefault).
    /// @param taskId The task.
    /// @param task Its current state.
    function claimDisputeDefault(uint256 taskId, Task calldata task) external;

    /// @notice Anyone refunds the funder of a Created or Accepted task past its deadline.
    /// @dev Reverts unless the task is Created or Accepted, and with
    /// {TaskEscrowTooEarly} until the deadline has passed. Emits {TaskSettled}
    /// (Expired, Expired).
    /// @param taskId The task.
    /// @param task Its current state.
    function refundExpired(uint256 taskId, Task calldata task) external;

    /// @notice The client cancels a task nobody accepted; the funder is refunded.
    /// @dev Reverts unless the caller is the client and the task is Created. Emits
    /// {TaskSettled} (Cancelled, Cancelled).
    /// @param taskId The task.
    /// @param task Its current state.
    function cancelTask(uint256 taskId, Task calldata task) external;

    /// @notice The executor declines a task it has not delivered; the funder is
    /// refunded the whole amount at once.
    /// @dev Reverts unless the caller is the executor and the task is Created or
    /// Accepted with its deadline not passed ({TaskEscrowTooLate} after it: then
    /// {refundExpired} is the way, and the task ends Expired, not Declined). Emits
    /// {TaskDeclined} then {TaskSettled} (Declined, Declined).
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param reasonURI Why the executor declines; only emitted.
    function declineTask(uint256 taskId, Task calldata task, string calldata reasonURI) external;

    /// @notice The client re-routes a task its executor never accepted, or accepted
    /// and let pass its deadline, to `newExecutor` with `newDeadline`.
    /// @dev Reverts unless the caller is the client and the task is Created, or
    /// Accepted with its deadline passed ({TaskEscrowTooEarly} before). The new
    /// executor is checked as at creation: non-zero, neither client nor funder, and
    /// offering `capability` at no more than the amount. The task becomes Created
    /// again. Emits {TaskReassigned}.
    /// @param taskId The task.
    /// @param task Its current state.
    /// @param newExecutor The executor to assign.
    /// @param newDeadline Its deadline, in the future and at most a year ahead.
    /// @param capability What the new executor is hired for.
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

    /// @notice Owner: stop new tasks. Everything else keeps working, so no escrowed
    /// token is ever locked by a pause.
    /// @dev Reverts unless the caller is the owner.
    function pause() external;

    /// @notice Owner: allow new tasks again.
    /// @dev Reverts unless the caller is the owner.
    function unpause() external;

    /// @notice Owner: propose a new arbiter; takes effect when it calls {acceptArbiter}.
    /// @dev Reverts unless the caller is the owner; replaces any earlier proposal.
    /// Emits {ArbiterProposed}.
    /// @param newArbiter The proposed arbiter, non-zero.
    function proposeArbiter(address newArbiter) external;

    /// @notice The proposed arbiter takes the role.
    /// @dev Reverts with {TaskEscrowNotPending} unless the caller is the pending
    /// arbiter. Emits {ArbiterChanged}.
    function acceptArbiter() external;

    /// @notice Owner: propose a new appeal arbiter; takes effect on {acceptAppealArbiter}.
    /// @dev Reverts unless the caller is the owner; replaces any earlier proposal.
    /// Emits {AppealArbiterProposed}.
    /// @param newAppealArbiter The proposed appeal arbiter, non-zero.
    function proposeAppealArbiter(address newAppealArbiter) external;

    /// @notice The proposed appeal arbiter takes the role.
    /// @dev Reverts with {TaskEscrowNotPending} unless the caller is the pending
    /// appeal arbiter. Emits {AppealArbiterChanged}.
    function acceptAppealArbiter() external;

    /// @notice Owner: set the windows snapshotted into new tasks.
    /// @dev Reverts unless the caller is the owner, and with {TaskEscrowInvalidWindow}
    /// for a window out of range. Tasks already created keep their windows. Emits
    /// {WindowsUpdated}.
    /// @param newDisputeWindow Seconds the arbiter has to rule (one minute to 30 days).
    /// @param newAppealWindow Seconds to appeal a ruling (zero to 30 days; zero makes
    /// rulings final).
    /// @param newAppealRulingWindow Seconds the appeal arbiter has to rule (one minute
    /// to 30 days).
    function setWindows(uint32 newDisputeWindow, uint32 newAppealWindow, uint32 newAppealRulingWindow)
        external;

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @notice The settlement token.
    /// @dev Immutable; set at deployment.
    /// @return The token's address.
    function token() external view returns (address);

    /// @notice The current arbiter.
    /// @dev Changed only by {proposeArbiter} then {acceptArbiter}.
    /// @return The arbiter's address.
    function arbiter() external view returns (address);

    /// @notice The arbiter proposed and not yet accepted.
    /// @dev Cleared when the proposed arbiter accepts.
    /// @return The pending arbiter's address (zero if none).
    function pendingArbiter() external view returns (address);

    /// @notice The current appeal arbiter.
    /// @dev Changed only by {proposeAppealArbiter} then {acceptAppealArbiter}.
    /// @return The appeal arbiter's address.
    function appealArbiter() external view returns (address);

    /// @notice The appeal arbiter proposed and not yet accepted.
    /// @dev Cleared when the proposed appeal arbiter accepts.
    /// @return The pending appeal arbiter's address (zero if none).
    function pendingAppealArbiter() external view returns (address);

    /// @notice Dispute window snapshotted into new tasks.
    /// @dev Set by {setWindows}; each task keeps the value it was created with.
    /// @return Seconds.
    function disputeWindow() external view returns (uint32);

    /// @notice Appeal window snapshotted into new tasks; zero makes rulings final.
    /// @dev Set by {setWindows}; each task keeps the value it was created with.
    /// @return Seconds.
    function appealWindow() external view returns (uint32);

    /// @notice Appeal ruling window snapshotted into new tasks.
    /// @dev Set by {setWindows}; each task keeps the value it was created with.
    /// @return Seconds.
    function appealRulingWindow() external view returns (uint32);

    /// @notice The registry every executor must be registered, active and offering in.
    /// @dev Immutable; set at deployment.
    /// @return The registry's address.
    function registry() external view returns (address);

    /// @notice The stored hash of a task's state.
    /// @dev A settled task keeps its hash, so its id can never be funded again.
    /// @param taskId The task.
    /// @return `keccak256(abi.encode(task))` of its current state (zero if no such task).
    function taskHash(uint256 taskId) external view returns (bytes32);

    /// @notice The hash {taskHash} holds for `task`.
    /// @dev Lets a caller check a {Task} rebuilt from events before sending it.
    /// @param task A task state.
    /// @return `keccak256(abi.encode(task))`.
    function hashTask(Task calldata task) external pure returns (bytes32);

    /// @notice Most tasks one {createTasks} or {approvePayments} call takes.
    /// @dev Bounds the gas of one batch call well under a block.
    /// @return The batch limit (64).
    function MAX_BATCH() external view returns (uint256);

    /// @notice The id a task created by `funder` with reference `ref` gets.
    /// @dev Lets a funder know a task's id before creating it, and find it again after a crash.
    /// @param funder The funder (the caller of a creation).
    /// @param ref The funder's reference.
    /// @return `uint256(keccak256(abi.encode(funder, ref)))`.
    function taskIdFor(address funder, bytes32 ref) external pure returns (uint256);

    /// @notice The EIP-712 digest a sponsor signs for `grant` on this chain and contract.
    /// @dev Domain: name "Tessera TaskEscrow", version "1", this chain's id, this
    /// contract (see `eip712Domain()`, ERC-5267); type {GRANT_TYPEHASH}. The key of
    /// the grant's state ({grantState}).
    /// @param grant The grant.
    /// @return The digest.
    function grantDigest(Grant calldata grant) external view returns (bytes32);

    /// @notice What a grant has funded so far and whether it is revoked.
    /// @dev Zero and false for a grant never used nor revoked: its signature is
    /// checked on its first use.
    /// @param digest The grant's EIP-712 digest.
    /// @return spent The sum of the amounts it funded.
    /// @return revoked Whether its sponsor revoked it.
    function grantState(bytes32 digest) external view returns (uint128 spent, bool revoked);

    /// @notice What `grant` has funded so far and whether it is revoked.
    /// @dev As {grantState} of its digest, except for a grant whose first use created
    /// its mark ({grantMarkId}) and spent the whole budget: that use writes no state
    /// ({grantState} reads zero), and this reads its budget spent.
    /// @param grant The grant.
    /// @return spent The sum of the amounts it funded.
    /// @return revoked Whether its sponsor revoked it.
    function grantSpent(Grant calldata grant) external view returns (uint128 spent, bool revoked);

    /// @notice The id of `grant`'s mark: its task referenced by the grant's digest.
    /// @dev `uint256(keccak256(abi.encode(grant.sponsor, grantDigest(grant), 1)))`:
    /// three words where a task id hashes two, so no other creation makes it.
    /// @param grant The grant.
    /// @return The mark's task id.
    function grantMarkId(Grant calldata grant) external view returns (uint256);
}
