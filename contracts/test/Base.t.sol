// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AgentRegistry} from "../src/AgentRegistry.sol";
import {IdentityRegistry} from "../src/IdentityRegistry.sol";
import {TaskEscrow} from "../src/TaskEscrow.sol";
import {ITaskEscrow} from "../src/interfaces/ITaskEscrow.sol";
import {MockUSDC} from "../src/mocks/MockUSDC.sol";
import {Test} from "./utils/Test.sol";

/// @notice Shared fixture: a token, a registry, an escrow, one actor per role,
/// and helpers that drive a task and return its new state exactly as the
/// contract computes it (checked against the stored hash on every step).
abstract contract Base is Test {
    uint32 internal constant DISPUTE_WINDOW = 3 days;
    uint32 internal constant APPEAL_WINDOW = 2 days;
    uint32 internal constant APPEAL_RULING_WINDOW = 4 days;
    uint32 internal constant REVIEW_WINDOW = 1 days;
    uint128 internal constant AMOUNT = 10_000_000; // 10 USDC
    /// @dev The rating the tests' clients give in an approval.
    uint8 internal constant RATING = 87;
    uint256 internal constant START = 1_700_000_000;

    MockUSDC internal usdc;
    IdentityRegistry internal identity;
    AgentRegistry internal registry;
    TaskEscrow internal escrow;

    address internal owner;
    address internal funder;
    uint256 internal funderKey;
    address internal client;
    address internal executor;
    address internal executor2;
    address internal arbiter;
    address internal appealArbiter;
    address internal stranger;

    bytes32 internal constant PLAN = keccak256("plan-1");
    bytes32 internal constant CAPABILITY = "summarize";
    /// @dev What registered executors ask for {CAPABILITY}: one base unit, so any amount hires them.
    uint128 internal constant PRICE = 1;
    string internal constant SPEC = "data:application/json,{\"parent\":\"plan-1\",\"spec\":\"summarize\"}";
    string internal constant RESULT = "data:text/plain,three bullet points";

    uint256 private _refNonce;

    function setUp() public virtual {
        vm.warp(START);
        owner = makeAddr("owner");
        (funder, funderKey) = makeKey("funder");
        client = makeAddr("client");
        executor = makeAddr("executor");
        executor2 = makeAddr("executor2");
        arbiter = makeAddr("arbiter");
        appealArbiter = makeAddr("appealArbiter");
        stranger = makeAddr("stranger");

        usdc = new MockUSDC(owner);
        identity = new IdentityRegistry();
        registry = new AgentRegistry(address(identity));
        escrow = _deployEscrow(address(usdc));
        _registerExecutors();

        vm.prank(owner);
        usdc.mint(funder, 1_000_000_000_000);
        vm.prank(funder);
        usdc.approve(address(escrow), type(uint256).max);
    }

    /// @dev An escrow settling in `token` with the fixture's registry, roles and windows.
    function _deployEscrow(address token) internal returns (TaskEscrow) {
        return new TaskEscrow(
            token,
            address(registry),
            owner,
            arbiter,
            appealArbiter,
            DISPUTE_WINDOW,
            APPEAL_WINDOW,
            APPEAL_RULING_WINDOW
        );
    }

    /// @dev The escrow only funds registered executors: both offer {CAPABILITY}.
    /// The registry's own tests start from an empty registry instead.
    function _registerExecutors() internal virtual {
        _registerExecutor(executor);
        _registerExecutor(executor2);
    }

    /// @dev Registers `agent` in the registry offering {CAPABILITY} at {PRICE}.
    function _registerExecutor(address agent) internal {
        bytes32[] memory caps = new bytes32[](1);
        caps[0] = CAPABILITY;
        uint128[] memory prices = new uint128[](1);
        prices[0] = PRICE;
        vm.prank(agent);
        registry.register("ipfs://card", caps, prices);
    }

    /// @dev `n` ratings of {RATING}, for approvePayments.
    function _ratings(uint256 n) internal pure returns (uint8[] memory rs) {
        rs = new uint8[](n);
        for (uint256 i; i < n; ++i) {
            rs[i] = RATING;
        }
    }

    /*//////////////////////////////////////////////////////////////
                            TASK BUILDERS
    //////////////////////////////////////////////////////////////*/

    function _params(bytes32 ref) internal view returns (ITaskEscrow.CreateParams memory p) {
        p = ITaskEscrow.CreateParams({
            ref: ref,
            planId: PLAN,
            parentId: 0,
            capability: CAPABILITY,
            client: client,
            executor: executor,
            amount: AMOUNT,
            deadline: uint40(block.timestamp + 1 days),
            reviewWindow: REVIEW_WINDOW,
            specURI: SPEC
        });
    }

    function _nextRef() internal returns (bytes32) {
        return keccak256(abi.encode("ref", ++_refNonce));
    }

    /// @dev The state the contract stores right after creating `p` as `creator`.
    function _expectedCreated(ITaskEscrow.CreateParams memory p, address creator)
        internal
        view
        returns (ITaskEscrow.Task memory t)
    {
        t = ITaskEscrow.Task({
            funder: creator,
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

    function _create(ITaskEscrow.CreateParams memory p)
        internal
        returns (uint256 id, ITaskEscrow.Task memory t)
    {
        t = _expectedCreated(p, funder);
        vm.prank(funder);
        id = escrow.createTask(p);
        _assertStored(id, t);
    }

    function _create() internal returns (uint256 id, ITaskEscrow.Task memory t) {
        return _create(_params(_nextRef()));
    }

    function _accept(uint256 id, ITaskEscrow.Task memory t) internal returns (ITaskEscrow.Task memory) {
        vm.prank(t.executor);
        escrow.acceptTask(id, t);
        t.status = ITaskEscrow.Status.Accepted;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        return t;
    }

    function _complete(uint256 id, ITaskEscrow.Task memory t) internal returns (ITaskEscrow.Task memory) {
        vm.prank(t.executor);
        escrow.completeTask(id, t, RESULT);
        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(RESULT));
        _assertStored(id, t);
        return t;
    }

    /// @dev The executor delivers a Created task in one call.
    function _deliver(uint256 id, ITaskEscrow.Task memory t) internal returns (ITaskEscrow.Task memory) {
        vm.prank(t.executor);
        escrow.deliver(id, t, RESULT);
        t.status = ITaskEscrow.Status.Completed;
        t.updatedAt = uint40(block.timestamp);
        t.resultHash = keccak256(bytes(RESULT));
        _assertStored(id, t);
        return t;
    }

    function _dispute(uint256 id, ITaskEscrow.Task memory t) internal returns (ITaskEscrow.Task memory) {
        vm.prank(t.client);
        escrow.disputeTask(id, t, "ipfs://reason");
        t.status = ITaskEscrow.Status.Disputed;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        return t;
    }

    function _rule(uint256 id, ITaskEscrow.Task memory t, uint16 bps)
        internal
        returns (ITaskEscrow.Task memory)
    {
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, bps, "ipfs://rationale");
        t.status = ITaskEscrow.Status.Ruled;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = bps;
        _assertStored(id, t);
        return t;
    }

    function _appeal(uint256 id, ITaskEscrow.Task memory t, address who)
        internal
        returns (ITaskEscrow.Task memory)
    {
        vm.prank(who);
        escrow.appealRuling(id, t, "ipfs://appeal");
        t.status = ITaskEscrow.Status.Appealed;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
        return t;
    }

    /// @dev A task that reached Completed.
    function _completed() internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (id, t) = _create();
        t = _accept(id, t);
        t = _complete(id, t);
    }

    /// @dev A task that reached Disputed.
    function _disputed() internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (id, t) = _completed();
        t = _dispute(id, t);
    }

    /// @dev The state after settlement, as `_settle` computes it.
    function _settled(ITaskEscrow.Task memory t, ITaskEscrow.Status status, uint16 bps)
        internal
        view
        returns (ITaskEscrow.Task memory)
    {
        t.status = status;
        t.updatedAt = uint40(block.timestamp);
        t.executorShareBps = bps;
        return t;
    }

    function _assertStored(uint256 id, ITaskEscrow.Task memory t) internal view {
        assertEq(escrow.taskHash(id), keccak256(abi.encode(t)), "stored task hash");
    }

    function _assertStatus(uint256 id, ITaskEscrow.Task memory t, ITaskEscrow.Status status) internal view {
        assertEq(uint256(t.status), uint256(status), "status");
        _assertStored(id, t);
    }

    /// @dev EIP-2612 permit signature by `funderKey` for the escrow.
    function _permit(uint256 value, uint256 deadline) internal view returns (uint8 v, bytes32 r, bytes32 s) {
        bytes32 typehash =
            keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");
        bytes32 structHash =
            keccak256(abi.encode(typehash, funder, address(escrow), value, usdc.nonces(funder), deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash));
        (v, r, s) = vm.sign(funderKey, digest);
    }
}
