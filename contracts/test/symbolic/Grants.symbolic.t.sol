// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";

import {AgentRegistry} from "../../src/AgentRegistry.sol";
import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {MockUSDC} from "../../src/mocks/MockUSDC.sol";
import {TaskEscrow} from "../../src/TaskEscrow.sol";
import {Test} from "../utils/Test.sol";
import {svm} from "./SVM.sol";

/// @notice A sponsor wallet (ERC-1271) that signs one digest: the grant's. ECDSA
/// recovery is not symbolic in halmos; the contract wallet path is, and it is
/// the same check of the same digest.
contract OneDigestWallet is IERC1271 {
    bytes32 public digest;

    function set(bytes32 d) external {
        digest = d;
    }

    function isValidSignature(bytes32 hash, bytes calldata) external view returns (bytes4) {
        return hash == digest ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}

/// @notice Symbolic checks of createWithGrants, run by halmos (`make audit`):
/// for every caller, every amount, every time and a grant either fresh or
/// already part spent (by a first use that created its mark or not), a creation
/// that succeeds was made by the grant's operator, before its validUntil, for
/// its plan, and leaves the grant's spent (`grantSpent`) within its budget,
/// grown by exactly what the sponsor paid; a grant that a first use creating its
/// mark spent in full (no slot written) funds nothing more.
contract EscrowSymbolicGrants is Test {
    uint128 internal constant BUDGET = 5_000_000;
    uint128 internal constant FIRST = 2_000_000;
    uint32 internal constant WINDOW = 1 days;
    address internal constant OWNER = address(0x1000);
    address internal constant OPERATOR = address(0x1001);
    address internal constant EXECUTOR = address(0x1003);
    address internal constant ARBITER = address(0x1004);
    bytes32 internal constant PLAN = "plan";

    MockUSDC internal usdc;
    TaskEscrow internal escrow;
    OneDigestWallet internal sponsor;
    ITaskEscrow.Grant internal grant;
    bytes32 internal digest;

    function setUp() public {
        vm.warp(1_700_000_000);
        usdc = new MockUSDC(OWNER);
        AgentRegistry registry = new AgentRegistry(address(0));
        escrow =
            new TaskEscrow(address(usdc), address(registry), OWNER, ARBITER, ARBITER, WINDOW, WINDOW, WINDOW);
        bytes32[] memory caps = new bytes32[](1);
        caps[0] = "summarize";
        uint128[] memory prices = new uint128[](1);
        prices[0] = 1;
        vm.prank(EXECUTOR);
        registry.register("ipfs://card", caps, prices);
        sponsor = new OneDigestWallet();
        vm.prank(OWNER);
        usdc.mint(address(sponsor), 10 * uint256(BUDGET));
        vm.prank(address(sponsor));
        usdc.approve(address(escrow), type(uint256).max);
        grant = ITaskEscrow.Grant({
            sponsor: address(sponsor),
            planId: PLAN,
            operator: OPERATOR,
            budget: BUDGET,
            validUntil: uint40(block.timestamp + 7 days),
            nonce: 1
        });
        digest = escrow.grantDigest(grant);
        sponsor.set(digest);
    }

    function _batch(bytes32 ref, bytes32 plan, uint128 amount)
        internal
        view
        returns (ITaskEscrow.GrantedBatch[] memory bs)
    {
        ITaskEscrow.CreateParams[] memory ps = new ITaskEscrow.CreateParams[](1);
        ps[0] = ITaskEscrow.CreateParams({
            ref: ref,
            planId: plan,
            parentId: 0,
            capability: "summarize",
            client: OPERATOR,
            executor: EXECUTOR,
            amount: amount,
            deadline: uint40(block.timestamp + WINDOW),
            reviewWindow: WINDOW,
            specURI: "data:,x"
        });
        bs = new ITaskEscrow.GrantedBatch[](1);
        bs[0] = ITaskEscrow.GrantedBatch({grant: grant, signature: "", params: ps});
    }

    /// @dev No createWithGrants call ends with spent above the budget, or
    /// succeeds for a caller other than the operator, after validUntil, or for
    /// another plan; what it adds to spent is what the sponsor paid.
    function check_grantSpendWithinBudgetByOperatorOnly() public {
        // The grant fresh, or already part spent by a first creation, which
        // created its mark (its task referenced by the digest) or not.
        uint256 used = svm.createUint256("used") % 3;
        if (used != 0) {
            vm.prank(OPERATOR);
            escrow.createWithGrants(_batch(used == 1 ? bytes32("first") : digest, PLAN, FIRST));
        }
        (uint128 spentBefore,) = escrow.grantSpent(grant);
        uint256 paidBefore = usdc.balanceOf(address(sponsor));

        address caller = svm.createAddress("caller");
        uint128 amount = uint128(svm.createUint256("amount"));
        bytes32 plan = bytes32(svm.createUint256("plan"));
        // A fresh reference, or the digest: the grant's mark, id grantMarkId (on a
        // fresh grant, a first use that, with the whole budget, writes no slot; on
        // a grant part spent, the mark created late, or a duplicate of it).
        bytes32 ref = svm.createUint256("ref") % 2 == 0 ? bytes32("second") : digest;
        vm.warp(block.timestamp + svm.createUint256("elapsed") % (30 days));
        ITaskEscrow.GrantedBatch[] memory bs = _batch(ref, plan, amount);
        vm.prank(caller);
        (bool ok, bytes memory ret) = address(escrow).call(abi.encodeCall(ITaskEscrow.createWithGrants, (bs)));

        (uint128 spent,) = escrow.grantSpent(grant);
        assert(spent <= BUDGET);
        if (ok) {
            // The task referenced by the digest is the mark, the others' ids are (sponsor, ref)'s.
            uint256 id = abi.decode(ret, (uint256[]))[0];
            assert(
                id == (ref == digest ? escrow.grantMarkId(grant) : escrow.taskIdFor(address(sponsor), ref))
            );
            assert(caller == OPERATOR);
            assert(block.timestamp <= grant.validUntil);
            assert(plan == PLAN);
            assert(spent == spentBefore + amount);
            assert(paidBefore - usdc.balanceOf(address(sponsor)) == amount);
        } else {
            assert(spent == spentBefore);
        }
    }

    /// @dev Once a first use that created the grant's mark spent its whole budget
    /// (writing no slot), no creation under the grant succeeds, whoever calls,
    /// whenever, with whatever amount, plan and reference (a fresh one, or the
    /// digest again); the sponsor pays nothing more and grantSpent stays the budget.
    function check_markedFullUseCannotBeReplayed() public {
        vm.prank(OPERATOR);
        escrow.createWithGrants(_batch(digest, PLAN, BUDGET));
        (uint128 slot,) = escrow.grantState(digest);
        assert(slot == 0);
        assert(escrow.taskHash(escrow.grantMarkId(grant)) != 0);
        uint256 paidBefore = usdc.balanceOf(address(sponsor));

        address caller = svm.createAddress("caller");
        uint128 amount = uint128(svm.createUint256("amount"));
        bytes32 plan = bytes32(svm.createUint256("plan"));
        bytes32 ref = svm.createUint256("ref") % 2 == 0 ? bytes32("second") : digest;
        vm.warp(block.timestamp + svm.createUint256("elapsed") % (30 days));
        ITaskEscrow.GrantedBatch[] memory bs = _batch(ref, plan, amount);
        vm.prank(caller);
        (bool ok,) = address(escrow).call(abi.encodeCall(ITaskEscrow.createWithGrants, (bs)));

        assert(!ok);
        assert(usdc.balanceOf(address(sponsor)) == paidBefore);
        (uint128 spent,) = escrow.grantSpent(grant);
        assert(spent == BUDGET);
    }

    /// @dev Once the sponsor revoked the grant, no creation under it succeeds,
    /// whoever calls and whatever it asks.
    function check_revokedGrantFundsNothing() public {
        if (svm.createUint256("used") % 2 == 1) {
            vm.prank(OPERATOR);
            escrow.createWithGrants(_batch("first", PLAN, FIRST));
        }
        vm.prank(address(sponsor));
        escrow.revokeGrant(grant);
        address caller = svm.createAddress("caller");
        uint128 amount = uint128(svm.createUint256("amount"));
        ITaskEscrow.GrantedBatch[] memory bs = _batch("second", PLAN, amount);
        vm.prank(caller);
        (bool ok,) = address(escrow).call(abi.encodeCall(ITaskEscrow.createWithGrants, (bs)));
        assert(!ok);
    }
}
