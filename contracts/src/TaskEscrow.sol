// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {IAgentRegistry} from "./interfaces/IAgentRegistry.sol";
import {ITaskEscrow} from "./interfaces/ITaskEscrow.sol";

/// @title TaskEscrow
/// @notice See {ITaskEscrow}.
///
/// @dev Storage layout: one slot per task, `_taskHashes[taskId]`, holding
/// `keccak256(abi.encode(Task))`. A terminal task keeps a non-zero hash, so a
/// reference can never be reused and a settled task can never be paid again.
/// The task id is `uint256(keccak256(abi.encode(funder, ref)))`: the existence
/// check of the id is the idempotency check of the reference, at no extra slot.
/// A sponsor's grant takes one slot, `_grants[digest]`: what it funded so far in
/// the low 128 bits, its revocation in the top bit. A slot at zero is a grant whose
/// signature is checked on its use, unless its mark exists: the task of the grant
/// referenced by its digest, whose id is `grantMarkId(grant)` (a 96-byte preimage:
/// no `(funder, ref)` hashes to it, and no other grant can create it). A first use
/// that creates the mark and spends the whole budget writes no slot (a replay would
/// have to create the mark again); any other use writes it.
/// The pause flag shares its slot with the windows every creation reads.
contract TaskEscrow is ITaskEscrow, Ownable2Step, ReentrancyGuardTransient, EIP712 {
    using SafeERC20 for IERC20;

    /// @notice Basis points in a whole.
    uint16 public constant BPS = 10_000;
    /// @notice Shortest review or dispute window.
    uint32 public constant MIN_WINDOW = 1 minutes;
    /// @notice Longest review, dispute or appeal window.
    uint32 public constant MAX_WINDOW = 30 days;
    /// @notice Furthest a deadline may lie in the future.
    uint40 public constant MAX_DEADLINE_HORIZON = 365 days;
    /// @inheritdoc ITaskEscrow
    uint256 public constant override MAX_BATCH = 256;

    /// @dev Words in an ABI-encoded {Task}; a memory {Task} has the same layout.
    uint256 private constant TASK_WORDS = 14;

    IERC20 private immutable _token;
    IAgentRegistry private immutable _registry;

    // One slot: what every creation reads (the windows it copies, the pause flag).
    uint32 public override disputeWindow;
    uint32 public override appealWindow;
    uint32 public override appealRulingWindow;
    bool private _paused;
    address public override arbiter;
    address public override pendingArbiter;
    address public override appealArbiter;
    address public override pendingAppealArbiter;

    mapping(uint256 taskId => bytes32 stateHash) private _taskHashes;
    mapping(bytes32 digest => uint256 spentAndRevoked) private _grants;

    /// @notice The EIP-712 type a sponsor signs.
    bytes32 public constant GRANT_TYPEHASH = keccak256(
        "Grant(address sponsor,bytes32 planId,address operator,uint128 budget,uint40 validUntil,uint256 nonce)"
    );
    /// @dev The top bit of a grant's slot: revoked.
    uint256 private constant _REVOKED = 1 << 255;
    /// @dev The third word of a grant mark's id preimage ({grantMarkId}).
    uint256 private constant _MARK = 1;
    /// @notice The highest rating a client gives in an approval (percent).
    uint8 public constant MAX_RATING = 100;

    /// @notice The owner paused creation (OpenZeppelin's Pausable event).
    /// @param account Who paused.
    event Paused(address account);
    /// @notice The owner lifted the pause (OpenZeppelin's Pausable event).
    /// @param account Who unpaused.
    event Unpaused(address account);
    /// @notice Creation while paused (OpenZeppelin's Pausable error).
    error EnforcedPause();
    /// @notice Unpausing while not paused (OpenZeppelin's Pausable error).
    error ExpectedPause();

    /// @dev Reverts with {EnforcedPause} while paused.
    modifier whenNotPaused() {
        if (_paused) revert EnforcedPause();
        _;
    }

    /// @param token_ The settlement token (6-decimal USDC on live chains).
    /// @param registry_ The agent registry every executor must offer its capability in.
    /// @param owner_ May pause, rotate arbiters and set windows.
    /// @param arbiter_ Rules on disputes.
    /// @param appealArbiter_ Rules on appeals.
    /// @param disputeWindow_ Seconds the arbiter has to rule on a dispute.
    /// @param appealWindow_ Seconds a party has to appeal a ruling; zero makes rulings final.
    /// @param appealRulingWindow_ Seconds the appeal arbiter has to rule on an appeal.
    constructor(
        address token_,
        address registry_,
        address owner_,
        address arbiter_,
        address appealArbiter_,
        uint32 disputeWindow_,
        uint32 appealWindow_,
        uint32 appealRulingWindow_
    ) Ownable(owner_) EIP712("Tessera TaskEscrow", "1") {
        if (
            token_ == address(0) || registry_ == address(0) || arbiter_ == address(0)
                || appealArbiter_ == address(0)
        ) {
            revert TaskEscrowZeroAddress();
        }
        _token = IERC20(token_);
        _registry = IAgentRegistry(registry_);
        arbiter = arbiter_;
        appealArbiter = appealArbiter_;
        _setWindows(disputeWindow_, appealWindow_, appealRulingWindow_);
        emit ArbiterChanged(address(0), arbiter_);
        emit AppealArbiterChanged(address(0), appealArbiter_);
    }

    /*//////////////////////////////////////////////////////////////
                            CREATION
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc ITaskEscrow
    function createTask(CreateParams calldata p)
        external
        override
        nonReentrant
        whenNotPaused
        returns (uint256 taskId)
    {
        taskId = _create(p, _NOT_IN_BATCH, msg.sender, _taskIdFor(msg.sender, p.ref));
        _pull(p.amount);
    }

    /// @inheritdoc ITaskEscrow
    function createTaskWithPermit(
        CreateParams calldata p,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external override nonReentrant whenNotPaused returns (uint256 taskId) {
        _permit(p.amount, permitDeadline, v, r, s);
        taskId = _create(p, _NOT_IN_BATCH, msg.sender, _taskIdFor(msg.sender, p.ref));
        _pull(p.amount);
    }

    /// @inheritdoc ITaskEscrow
    function createTasks(CreateParams[] calldata ps)
        external
        override
        nonReentrant
        whenNotPaused
        returns (uint256[] memory taskIds)
    {
        uint256 total;
        (taskIds, total) = _createAll(ps);
        _pull(total);
    }

    /// @inheritdoc ITaskEscrow
    function createTasksWithPermit(
        CreateParams[] calldata ps,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external override nonReentrant whenNotPaused returns (uint256[] memory taskIds) {
        _permit(_sum(ps), permitDeadline, v, r, s);
        uint256 created;
        (taskIds, created) = _createAll(ps);
        _pull(created);
    }

    /// @dev What a batch escrows in all: the value its one permit must cover.
    function _sum(CreateParams[] calldata ps) private pure returns (uint256 total) {
        for (uint256 i; i < ps.length; ++i) {
            total += ps[i].amount;
        }
    }

    /// @dev A permit someone else already submitted (front-running) must not block
    /// creation: if it fails, the allowance check in transferFrom decides.
    function _permit(uint256 value, uint256 permitDeadline, uint8 v, bytes32 r, bytes32 s) private {
        try IERC20Permit(address(_token)).permit(msg.sender, address(this), value, permitDeadline, v, r, s) {}
            catch {}
    }

    function _createAll(CreateParams[] calldata ps)
        private
        returns (uint256[] memory taskIds, uint256 total)
    {
        if (ps.length == 0 || ps.length > MAX_BATCH) {
            revert TaskEscrowBatchSize(ps.length);
        }
        taskIds = new uint256[](ps.length);
        for (uint256 i; i < ps.length; ++i) {
            taskIds[i] = _create(ps[i], i, msg.sender, _taskIdFor(msg.sender, ps[i].ref));
            total += ps[i].amount;
        }
    }

    /// @dev Marks a creation outside any batch, so a reused reference reverts with
    /// {TaskEscrowDuplicateReference} rather than a batch index.
    uint256 private constant _NOT_IN_BATCH = type(uint256).max;

    /// @dev Creates one task funded by `funder` (the caller, or a grant's sponsor),
    /// with id `taskId` (`taskIdFor(funder, p.ref)`, or a grant's mark); the caller
    /// moves the money afterwards.
    function _create(CreateParams calldata p, uint256 index, address funder, uint256 taskId)
        private
        returns (uint256)
    {
        // Checks
        if (p.amount == 0) revert TaskEscrowZeroAmount();
        if (p.client == address(0) || p.executor == address(0)) revert TaskEscrowZeroAddress();
        if (p.executor == p.client || p.executor == msg.sender || p.executor == funder) {
            revert TaskEscrowSelfDealing(p.executor);
        }
        _checkDeadline(p.deadline);
        if (p.reviewWindow < MIN_WINDOW || p.reviewWindow > MAX_WINDOW) {
            revert TaskEscrowInvalidWindow(p.reviewWindow);
        }
        _checkOffer(p.executor, p.capability, p.amount);

        if (_taskHashes[taskId] != 0) {
            if (index == _NOT_IN_BATCH) revert TaskEscrowDuplicateReference(funder, p.ref);
            revert TaskEscrowBatchDuplicate(index, p.ref);
        }

        // Effects
        Task memory t = Task({
            funder: funder,
            client: p.client,
            executor: p.executor,
            amount: p.amount,
            deadline: p.deadline,
            updatedAt: uint40(block.timestamp),
            reviewWindow: p.reviewWindow,
            disputeWindow: disputeWindow,
            appealWindow: appealWindow,
            appealRulingWindow: appealRulingWindow,
            executorShareBps: 0,
            status: Status.Created,
            specHash: keccak256(bytes(p.specURI)),
            resultHash: bytes32(0)
        });
        _store(taskId, t);
        emit TaskCreated(taskId, p.planId, p.parentId, p.ref, p.capability, t, p.specURI);
        return taskId;
    }

    /// @dev Interactions: pulls `amount` from the caller and insists the exact amount arrived.
    function _pull(uint256 amount) private {
        _pullFrom(msg.sender, amount);
    }

    /// @dev Pulls `amount` from `from`: the caller, or a grant's sponsor whose
    /// signature was checked.
    function _pullFrom(address from, uint256 amount) private {
        uint256 balanceBefore = _token.balanceOf(address(this));
        // `from` is the caller, or the sponsor of a grant whose signature, operator,
        // plan and budget were checked by {createWithGrants}.
        // slither-disable-next-line arbitrary-send-erc20
        _token.safeTransferFrom(from, address(this), amount);
        uint256 received = _token.balanceOf(address(this)) - balanceBefore;
        if (received != amount) revert TaskEscrowTransferMismatch(amount, received);
    }

    /// @dev The fourth layer of the high-stakes defence: money can only be escrowed
    /// for an executor the registry lists as active and offering `capability` at no
    /// more than `amount`, whoever the caller is.
    function _checkOffer(address executor, bytes32 capability, uint128 amount) private view {
        (bool active, uint128 price) = _registry.offerOf(executor, capability);
        if (!active || price == 0 || price > amount) {
            revert TaskEscrowExecutorNotOffering(executor, capability, amount);
        }
    }

    /*//////////////////////////////////////////////////////////////
                                GRANTS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc ITaskEscrow
    function createWithGrants(GrantedBatch[] calldata batches)
        external
        override
        nonReentrant
        whenNotPaused
        returns (uint256[] memory taskIds)
    {
        uint256 n = 0;
        for (uint256 b; b < batches.length; ++b) {
            uint256 len = batches[b].params.length;
            if (len == 0) revert TaskEscrowBatchSize(0);
            n += len;
        }
        if (n == 0 || n > MAX_BATCH) revert TaskEscrowBatchSize(n);
        taskIds = new uint256[](n);
        uint256 k = 0;
        for (uint256 b; b < batches.length; ++b) {
            k = _createGranted(batches[b], taskIds, k);
        }
    }

    /// @dev One batch of {createWithGrants}: its tasks from position `k` of
    /// `taskIds` on; returns the position after them.
    function _createGranted(GrantedBatch calldata gb, uint256[] memory taskIds, uint256 k)
        private
        returns (uint256)
    {
        Grant calldata g = gb.grant;
        // Checks
        if (msg.sender != g.operator) revert TaskEscrowGrantOperator(msg.sender);
        // slither-disable-next-line timestamp
        if (block.timestamp > g.validUntil) revert TaskEscrowGrantExpired(g.validUntil);
        bytes32 digest = _grantDigest(g);
        uint256 state = _grants[digest];
        if (state & _REVOKED != 0) revert TaskEscrowGrantRevoked(digest);
        // The grant's mark: its task referenced by the digest, under this grant only.
        uint256 mark = _markIdFor(g.sponsor, digest);
        if (state == 0) {
            // A grant whose mark exists was used in full: its slot stayed zero.
            if (_taskHashes[mark] != 0) revert TaskEscrowGrantUsed(digest);
            if (!_signedBy(g.sponsor, digest, gb.signature)) revert TaskEscrowGrantSignature(digest);
        }
        // Whether this call creates the mark: a first use that does, and spends the
        // whole budget, leaves the slot at zero.
        bool marks = false;
        uint256 total = 0;
        for (uint256 i; i < gb.params.length; ++i) {
            CreateParams calldata p = gb.params[i];
            if (p.planId != g.planId) revert TaskEscrowGrantPlan(k, p.planId);
            uint256 id;
            if (p.ref == digest) {
                (id, marks) = (mark, true);
            } else {
                id = _taskIdFor(g.sponsor, p.ref);
            }
            taskIds[k] = _create(p, k, g.sponsor, id);
            total += p.amount;
            ++k;
        }
        uint256 spent = state + total;
        if (spent > g.budget) revert TaskEscrowGrantBudget(digest, g.budget, spent);
        // Effects
        if (state != 0 || !marks || spent != g.budget) {
            _grants[digest] = spent;
            emit GrantSpent(digest, g.sponsor, g.planId, uint128(spent));
        }
        // Interactions
        _pullFrom(g.sponsor, total);
        return k;
    }

    /// @inheritdoc ITaskEscrow
    function revokeGrant(Grant calldata grant) external override {
        if (msg.sender != grant.sponsor) revert TaskEscrowGrantNotSponsor(msg.sender);
        bytes32 digest = _grantDigest(grant);
        uint256 state = _grants[digest];
        if (state & _REVOKED != 0) revert TaskEscrowGrantRevoked(digest);
        _grants[digest] = state | _REVOKED;
        emit GrantRevoked(digest, grant.sponsor, grant.planId);
    }

    /// @dev Whether `signature` is the sponsor's over `digest`: its own key's
    /// (ECDSA, tried first: an EOA, or an account whose code its key delegated,
    /// which that key controls anyway), else its ERC-1271 answer. Trying ECDSA
    /// first spares an EOA sponsor the cold code-size lookup of
    /// {SignatureChecker-isValidSignatureNow}.
    function _signedBy(address sponsor, bytes32 digest, bytes calldata signature)
        private
        view
        returns (bool)
    {
        // The third value is the error's argument; `err` alone says whether it recovered.
        // slither-disable-next-line unused-return
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
        if (err == ECDSA.RecoverError.NoError && recovered == sponsor) return true;
        return SignatureChecker.isValidERC1271SignatureNow(sponsor, digest, signature);
    }

    function _grantDigest(Grant calldata g) private view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(GRANT_TYPEHASH, g)));
    }

    /*//////////////////////////////////////////////////////////////
                            LIFECYCLE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc ITaskEscrow
    function acceptTask(uint256 taskId, Task calldata task) external override {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.executor) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Created);
        if (block.timestamp > t.deadline) revert TaskEscrowTooLate(t.deadline);

        t.status = Status.Accepted;
        t.updatedAt = uint40(block.timestamp);
        _store(taskId, t);
        emit TaskAccepted(taskId, msg.sender, t.updatedAt);
    }

    /// @inheritdoc ITaskEscrow
    function completeTask(uint256 taskId, Task calldata task, string calldata resultURI) external override {
        _complete(taskId, task, resultURI, Status.Accepted);
    }

    /// @inheritdoc ITaskEscrow
    function deliver(uint256 taskId, Task calldata task, string calldata resultURI) external override {
        _complete(taskId, task, resultURI, Status.Created);
    }

    /// @dev The executor delivers `resultURI` on a task in status `from` (Accepted
    /// for {completeTask}, Created for {deliver}) before its deadline.
    function _complete(uint256 taskId, Task calldata task, string calldata resultURI, Status from) private {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.executor) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, from);
        if (block.timestamp > t.deadline) revert TaskEscrowTooLate(t.deadline);

        t.status = Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(resultURI));
        _store(taskId, t);
        emit TaskCompleted(taskId, msg.sender, resultURI, t.updatedAt);
    }

    /// @inheritdoc ITaskEscrow
    function approvePayment(uint256 taskId, Task calldata task, uint8 rating) external override nonReentrant {
        Task memory t = _approved(taskId, task, rating);
        _token.safeTransfer(t.executor, t.amount);
    }

    /// @inheritdoc ITaskEscrow
    function approvePayments(uint256[] calldata taskIds, Task[] calldata tasks, uint8[] calldata ratings)
        external
        override
        nonReentrant
    {
        if (taskIds.length == 0 || taskIds.length > MAX_BATCH) {
            revert TaskEscrowBatchSize(taskIds.length);
        }
        if (taskIds.length != tasks.length) revert TaskEscrowLengthMismatch(taskIds.length, tasks.length);
        if (taskIds.length != ratings.length) {
            revert TaskEscrowLengthMismatch(taskIds.length, ratings.length);
        }
        // Consecutive items of one executor are paid in one transfer: each
        // task's state is written and its {TaskSettled} emitted before the
        // transfer that carries its amount.
        address payee = address(0);
        uint256 owed = 0;
        for (uint256 i; i < taskIds.length; ++i) {
            Task memory t = _approved(taskIds[i], tasks[i], ratings[i]);
            if (t.executor != payee) {
                if (owed != 0) _token.safeTransfer(payee, owed);
                payee = t.executor;
                owed = 0;
            }
            owed += t.amount;
        }
        _token.safeTransfer(payee, owed);
    }

    /// @dev Checks and records the client's approval of `taskId` (Paid, in full)
    /// with its `rating` and emits {TaskSettled}; the caller pays the executor `t.amount`.
    function _approved(uint256 taskId, Task calldata task, uint8 rating) private returns (Task memory t) {
        t = _load(taskId, task);
        if (msg.sender != t.client) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Completed);
        if (rating > MAX_RATING) revert TaskEscrowInvalidRating(rating);
        _record(taskId, t, BPS, Settlement.Approved, _NO_RULING, "", rating);
    }

    /// @inheritdoc ITaskEscrow
    function releasePayment(uint256 taskId, Task calldata task) external override nonReentrant {
        Task memory t = _load(taskId, task);
        _requireStatus(taskId, t, Status.Completed);
        uint256 reviewEnd = uint256(t.updatedAt) + t.reviewWindow;
        if (block.timestamp <= reviewEnd) revert TaskEscrowTooEarly(reviewEnd + 1);
        _settle(taskId, t, BPS, Settlement.AutoReleased);
    }

    /// @inheritdoc ITaskEscrow
    function disputeTask(uint256 taskId, Task calldata task, string calldata reasonURI) external override {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.client) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Completed);
        uint256 reviewEnd = uint256(t.updatedAt) + t.reviewWindow;
        if (block.timestamp > reviewEnd) revert TaskEscrowTooLate(reviewEnd);

        t.status = Status.Disputed;
        t.updatedAt = uint40(block.timestamp);
        _store(taskId, t);
        emit TaskDisputed(taskId, msg.sender, reasonURI, t.updatedAt);
    }

    /// @inheritdoc ITaskEscrow
    function resolveDispute(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external override nonReentrant {
        Task memory t = _load(taskId, task);
        if (msg.sender != arbiter) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Disputed);
        uint256 disputeEnd = uint256(t.updatedAt) + t.disputeWindow;
        if (block.timestamp > disputeEnd) revert TaskEscrowTooLate(disputeEnd);
        if (executorShareBps > BPS) revert TaskEscrowInvalidShare(executorShareBps);

        if (t.appealWindow == 0) {
            // Final at once: the ruling, then the settlement it makes (state written first).
            _settle(taskId, t, executorShareBps, Settlement.Ruling, _RULED_BY_ARBITER, rationaleURI);
        } else {
            t.status = Status.Ruled;
            t.updatedAt = uint40(block.timestamp);
            t.executorShareBps = executorShareBps;
            _store(taskId, t);
            emit DisputeRuled(taskId, msg.sender, executorShareBps, rationaleURI, t.updatedAt);
        }
    }

    /// @inheritdoc ITaskEscrow
    function appealRuling(uint256 taskId, Task calldata task, string calldata reasonURI) external override {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.client && msg.sender != t.executor) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Ruled);
        uint256 appealEnd = uint256(t.updatedAt) + t.appealWindow;
        if (block.timestamp > appealEnd) revert TaskEscrowTooLate(appealEnd);

        t.status = Status.Appealed;
        t.updatedAt = uint40(block.timestamp);
        _store(taskId, t);
        emit RulingAppealed(taskId, msg.sender, reasonURI, t.updatedAt);
    }

    /// @inheritdoc ITaskEscrow
    function resolveAppeal(
        uint256 taskId,
        Task calldata task,
        uint16 executorShareBps,
        string calldata rationaleURI
    ) external override nonReentrant {
        Task memory t = _load(taskId, task);
        if (msg.sender != appealArbiter) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Appealed);
        uint256 appealRulingEnd = uint256(t.updatedAt) + t.appealRulingWindow;
        if (block.timestamp > appealRulingEnd) revert TaskEscrowTooLate(appealRulingEnd);
        if (executorShareBps > BPS) revert TaskEscrowInvalidShare(executorShareBps);

        _settle(taskId, t, executorShareBps, Settlement.AppealRuling, _RULED_ON_APPEAL, rationaleURI);
    }

    /// @inheritdoc ITaskEscrow
    function finalizeRuling(uint256 taskId, Task calldata task) external override nonReentrant {
        Task memory t = _load(taskId, task);
        if (t.status != Status.Ruled && t.status != Status.Appealed) {
            revert TaskEscrowInvalidStatus(taskId, t.status);
        }
        // A ruling stands once its appeal window passed unappealed, or once the
        // appeal arbiter let the appeal ruling window pass.
        uint256 end =
            uint256(t.updatedAt) + (t.status == Status.Ruled ? t.appealWindow : t.appealRulingWindow);
        if (block.timestamp <= end) revert TaskEscrowTooEarly(end + 1);
        _settle(taskId, t, t.executorShareBps, Settlement.RulingFinalized);
    }

    /// @inheritdoc ITaskEscrow
    function claimDisputeDefault(uint256 taskId, Task calldata task) external override nonReentrant {
        Task memory t = _load(taskId, task);
        _requireStatus(taskId, t, Status.Disputed);
        uint256 disputeEnd = uint256(t.updatedAt) + t.disputeWindow;
        if (block.timestamp <= disputeEnd) revert TaskEscrowTooEarly(disputeEnd + 1);
        _settle(taskId, t, 0, Settlement.DisputeDefault);
    }

    /// @inheritdoc ITaskEscrow
    function refundExpired(uint256 taskId, Task calldata task) external override nonReentrant {
        Task memory t = _load(taskId, task);
        if (t.status != Status.Created && t.status != Status.Accepted) {
            revert TaskEscrowInvalidStatus(taskId, t.status);
        }
        if (block.timestamp <= t.deadline) revert TaskEscrowTooEarly(uint256(t.deadline) + 1);
        _settle(taskId, t, 0, Settlement.Expired);
    }

    /// @inheritdoc ITaskEscrow
    function cancelTask(uint256 taskId, Task calldata task) external override nonReentrant {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.client) revert TaskEscrowUnauthorized(msg.sender);
        _requireStatus(taskId, t, Status.Created);
        _settle(taskId, t, 0, Settlement.Cancelled);
    }

    /// @inheritdoc ITaskEscrow
    function declineTask(uint256 taskId, Task calldata task, string calldata reasonURI)
        external
        override
        nonReentrant
    {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.executor) revert TaskEscrowUnauthorized(msg.sender);
        // Created or Accepted only (a stored task is never None).
        if (t.status > Status.Accepted) revert TaskEscrowInvalidStatus(taskId, t.status);
        // A task is given back only while it can still be done; past the deadline it expires.
        if (block.timestamp > t.deadline) revert TaskEscrowTooLate(t.deadline);
        _settle(taskId, t, 0, Settlement.Declined, _DECLINED_BY_EXECUTOR, reasonURI);
    }

    /// @inheritdoc ITaskEscrow
    function reassignTask(
        uint256 taskId,
        Task calldata task,
        address newExecutor,
        uint40 newDeadline,
        bytes32 capability
    ) external override {
        Task memory t = _load(taskId, task);
        if (msg.sender != t.client) revert TaskEscrowUnauthorized(msg.sender);
        if (t.status == Status.Accepted) {
            // An accepted task can only be taken away once its executor let it go stale.
            if (block.timestamp <= t.deadline) revert TaskEscrowTooEarly(uint256(t.deadline) + 1);
        } else if (t.status != Status.Created) {
            revert TaskEscrowInvalidStatus(taskId, t.status);
        }
        if (newExecutor == address(0)) revert TaskEscrowZeroAddress();
        if (newExecutor == t.client || newExecutor == t.funder) revert TaskEscrowSelfDealing(newExecutor);
        _checkDeadline(newDeadline);
        _checkOffer(newExecutor, capability, t.amount);

        address previous = t.executor;
        t.executor = newExecutor;
        t.deadline = newDeadline;
        t.status = Status.Created;
        t.updatedAt = uint40(block.timestamp);
        _store(taskId, t);
        emit TaskReassigned(taskId, previous, newExecutor, newDeadline, t.updatedAt);
    }

    /*//////////////////////////////////////////////////////////////
                                ADMIN
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc ITaskEscrow
    function pause() external override onlyOwner whenNotPaused {
        _paused = true;
        emit Paused(msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function unpause() external override onlyOwner {
        if (!_paused) revert ExpectedPause();
        _paused = false;
        emit Unpaused(msg.sender);
    }

    /// @notice Whether creation is paused.
    /// @return True while paused.
    function paused() external view returns (bool) {
        return _paused;
    }

    /// @inheritdoc ITaskEscrow
    function proposeArbiter(address newArbiter) external override onlyOwner {
        if (newArbiter == address(0)) revert TaskEscrowZeroAddress();
        pendingArbiter = newArbiter;
        emit ArbiterProposed(arbiter, newArbiter);
    }

    /// @inheritdoc ITaskEscrow
    function acceptArbiter() external override {
        if (msg.sender != pendingArbiter) revert TaskEscrowNotPending(msg.sender);
        address previous = arbiter;
        arbiter = msg.sender;
        pendingArbiter = address(0);
        emit ArbiterChanged(previous, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function proposeAppealArbiter(address newAppealArbiter) external override onlyOwner {
        if (newAppealArbiter == address(0)) revert TaskEscrowZeroAddress();
        pendingAppealArbiter = newAppealArbiter;
        emit AppealArbiterProposed(appealArbiter, newAppealArbiter);
    }

    /// @inheritdoc ITaskEscrow
    function acceptAppealArbiter() external override {
        if (msg.sender != pendingAppealArbiter) revert TaskEscrowNotPending(msg.sender);
        address previous = appealArbiter;
        appealArbiter = msg.sender;
        pendingAppealArbiter = address(0);
        emit AppealArbiterChanged(previous, msg.sender);
    }

    /// @inheritdoc ITaskEscrow
    function setWindows(uint32 disputeWindow_, uint32 appealWindow_, uint32 appealRulingWindow_)
        external
        override
        onlyOwner
    {
        _setWindows(disputeWindow_, appealWindow_, appealRulingWindow_);
    }

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc ITaskEscrow
    function token() external view override returns (address) {
        return address(_token);
    }

    /// @inheritdoc ITaskEscrow
    function registry() external view override returns (address) {
        return address(_registry);
    }

    /// @inheritdoc ITaskEscrow
    function taskHash(uint256 taskId) external view override returns (bytes32) {
        return _taskHashes[taskId];
    }

    /// @inheritdoc ITaskEscrow
    function hashTask(Task calldata task) external pure override returns (bytes32) {
        return keccak256(abi.encode(task));
    }

    /// @inheritdoc ITaskEscrow
    function grantDigest(Grant calldata grant) external view override returns (bytes32) {
        return _grantDigest(grant);
    }

    /// @inheritdoc ITaskEscrow
    function grantState(bytes32 digest) external view override returns (uint128 spent, bool revoked) {
        uint256 state = _grants[digest];
        return (uint128(state), state & _REVOKED != 0);
    }

    /// @inheritdoc ITaskEscrow
    function grantSpent(Grant calldata grant) external view override returns (uint128 spent, bool revoked) {
        bytes32 digest = _grantDigest(grant);
        uint256 state = _grants[digest];
        spent = uint128(state);
        revoked = state & _REVOKED != 0;
        // A first use that created the mark and spent the whole budget wrote no slot.
        if (spent == 0 && _taskHashes[_markIdFor(grant.sponsor, digest)] != 0) {
            spent = grant.budget;
        }
    }

    /// @inheritdoc ITaskEscrow
    function grantMarkId(Grant calldata grant) external view override returns (uint256) {
        return _markIdFor(grant.sponsor, _grantDigest(grant));
    }

    /// @inheritdoc ITaskEscrow
    function taskIdFor(address funder, bytes32 ref) external pure override returns (uint256) {
        return _taskIdFor(funder, ref);
    }

    /*//////////////////////////////////////////////////////////////
                            INTERNALS
    //////////////////////////////////////////////////////////////*/

    /// @dev Copies `task` to memory and checks it against the stored hash. The copy
    /// is raw (no per-field ABI validation): the stored hash was computed from
    /// clean values, so any non-canonical encoding (dirty address bits, an
    /// out-of-range status) hashes differently and is rejected as stale.
    function _load(uint256 taskId, Task calldata task) private view returns (Task memory t) {
        bytes32 stored = _taskHashes[taskId];
        // An unset slot is the one way to tell an unknown id; the hash is no
        // balance and no clock, whatever slither infers from its inputs.
        // slither-disable-next-line incorrect-equality,timestamp
        if (stored == 0) revert TaskEscrowUnknownTask(taskId);
        assembly ("memory-safe") {
            t := mload(0x40)
            calldatacopy(t, task, mul(TASK_WORDS, 32))
            mstore(0x40, add(t, mul(TASK_WORDS, 32)))
        }
        if (_hash(t) != stored) revert TaskEscrowStaleTask(taskId);
    }

    function _taskIdFor(address funder, bytes32 ref) private pure returns (uint256) {
        return uint256(keccak256(abi.encode(funder, ref)));
    }

    /// @dev The id of the mark of `sponsor`'s grant `digest`: three words hashed,
    /// where every other task id hashes two, so no creation but the grant's own
    /// first use can make it.
    function _markIdFor(address sponsor, bytes32 digest) private pure returns (uint256) {
        return uint256(keccak256(abi.encode(sponsor, digest, _MARK)));
    }

    function _store(uint256 taskId, Task memory t) private {
        _taskHashes[taskId] = _hash(t);
    }

    /// @dev A memory {Task} is 14 clean words, laid out exactly as `abi.encode(Task)`,
    /// so hashing the memory in place equals `keccak256(abi.encode(t))` without a copy.
    function _hash(Task memory t) private pure returns (bytes32 h) {
        assembly ("memory-safe") {
            h := keccak256(t, mul(TASK_WORDS, 32))
        }
    }

    function _requireStatus(uint256 taskId, Task memory t, Status expected) private pure {
        if (t.status != expected) revert TaskEscrowInvalidStatus(taskId, t.status);
    }

    function _checkDeadline(uint40 deadline) private view {
        if (deadline <= block.timestamp || deadline > block.timestamp + MAX_DEADLINE_HORIZON) {
            revert TaskEscrowInvalidDeadline(deadline);
        }
    }

    function _setWindows(uint32 disputeWindow_, uint32 appealWindow_, uint32 appealRulingWindow_) private {
        if (disputeWindow_ < MIN_WINDOW || disputeWindow_ > MAX_WINDOW) {
            revert TaskEscrowInvalidWindow(disputeWindow_);
        }
        if (appealWindow_ > MAX_WINDOW) revert TaskEscrowInvalidWindow(appealWindow_);
        if (appealRulingWindow_ < MIN_WINDOW || appealRulingWindow_ > MAX_WINDOW) {
            revert TaskEscrowInvalidWindow(appealRulingWindow_);
        }
        disputeWindow = disputeWindow_;
        appealWindow = appealWindow_;
        appealRulingWindow = appealRulingWindow_;
        emit WindowsUpdated(disputeWindow_, appealWindow_, appealRulingWindow_);
    }

    /// @dev What {_settle} emits before {TaskSettled}: nothing, {DisputeRuled},
    /// {AppealRuled} or {TaskDeclined}.
    uint8 private constant _NO_RULING = 0;
    uint8 private constant _RULED_BY_ARBITER = 1;
    uint8 private constant _RULED_ON_APPEAL = 2;
    uint8 private constant _DECLINED_BY_EXECUTOR = 3;

    function _settle(uint256 taskId, Task memory t, uint16 executorShareBps, Settlement how) private {
        _settle(taskId, t, executorShareBps, how, _NO_RULING, "");
    }

    /// @dev Ends a task: `executorShareBps` of the amount to the executor, the rest
    /// to the funder. The terminal status follows from the shares. A ruling that
    /// settles at once, or a decline, is emitted after the state write, before
    /// {TaskSettled}; `rationaleURI` is then the ruling's rationale or the decline's reason.
    function _settle(
        uint256 taskId,
        Task memory t,
        uint16 executorShareBps,
        Settlement how,
        uint8 ruling,
        string memory rationaleURI
    ) private {
        (uint128 toExecutor, uint128 toFunder) =
            _record(taskId, t, executorShareBps, how, ruling, rationaleURI, 0);

        // Interactions
        if (toExecutor != 0) _token.safeTransfer(t.executor, toExecutor);
        if (toFunder != 0) _token.safeTransfer(t.funder, toFunder);
    }

    /// @dev The effects of {_settle}: the terminal state written and its events
    /// emitted (`rating`: the client's, in an approval; zero otherwise); returns
    /// what the executor and the funder are owed.
    function _record(
        uint256 taskId,
        Task memory t,
        uint16 executorShareBps,
        Settlement how,
        uint8 ruling,
        string memory rationaleURI,
        uint8 rating
    ) private returns (uint128 toExecutor, uint128 toFunder) {
        toExecutor = uint128((uint256(t.amount) * executorShareBps) / BPS);
        toFunder = t.amount - toExecutor;

        Status terminal;
        if (how == Settlement.Cancelled) terminal = Status.Cancelled;
        else if (how == Settlement.Expired) terminal = Status.Expired;
        else if (how == Settlement.Declined) terminal = Status.Declined;
        else if (toFunder == 0) terminal = Status.Paid;
        else if (toExecutor == 0) terminal = Status.Refunded;
        else terminal = Status.Split;

        // Effects
        t.status = terminal;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = executorShareBps;
        _store(taskId, t);
        if (ruling == _RULED_BY_ARBITER) {
            emit DisputeRuled(taskId, msg.sender, executorShareBps, rationaleURI, t.updatedAt);
        } else if (ruling == _RULED_ON_APPEAL) {
            emit AppealRuled(taskId, msg.sender, executorShareBps, rationaleURI, t.updatedAt);
        } else if (ruling == _DECLINED_BY_EXECUTOR) {
            emit TaskDeclined(taskId, msg.sender, rationaleURI, t.updatedAt);
        }
        emit TaskSettled(taskId, terminal, how, toExecutor, toFunder, rating, t.updatedAt);
    }
}
