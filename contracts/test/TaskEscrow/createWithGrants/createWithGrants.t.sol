// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {MockERC1271Wallet} from "../../mocks/MockERC1271Wallet.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors createWithGrants.tree. Each task passes the checks of
/// createTasks (createTasks/createTasks.t.sol); here what a grant adds: who may
/// spend it, until when, for which plan, up to what, signed by whom.
contract CreateWithGrantsTest is GrantBase {
    function test_RevertWhen_Paused() public {
        // it should revert with EnforcedPause
        _pause();
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(Pausable.EnforcedPause.selector));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_NoTaskOrAboveMax() public {
        // it should revert with TaskEscrowBatchSize
        ITaskEscrow.GrantedBatch[] memory none = new ITaskEscrow.GrantedBatch[](0);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, 0));
        escrow.createWithGrants(none);

        uint256 max = escrow.MAX_BATCH();
        ITaskEscrow.Grant memory g = _grant();
        g.budget = type(uint128).max;
        ITaskEscrow.GrantedBatch[] memory bs = new ITaskEscrow.GrantedBatch[](2);
        bs[0] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _grantParamsN(max)});
        bs[1] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _grantParamsN(1)});
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, max + 1));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_OneBatchEmpty() public {
        // it should revert with TaskEscrowBatchSize
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = new ITaskEscrow.GrantedBatch[](2);
        bs[0] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _grantParamsN(1)});
        bs[1] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _grantParamsN(0)});
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchSize.selector, 0));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_CallerNotOperator() public {
        // it should revert with TaskEscrowGrantOperator
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        address[4] memory others = [sponsor, client, stranger, funder];
        for (uint256 i; i < others.length; ++i) {
            vm.prank(others[i]);
            _expectGrantOperator(others[i]);
            escrow.createWithGrants(bs);
        }
        // After a first use too: the signature is not checked again, the caller is.
        vm.prank(operator);
        escrow.createWithGrants(bs);
        bs[0].params = _grantParamsN(1);
        vm.prank(stranger);
        _expectGrantOperator(stranger);
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_Expired() public {
        // it should revert with TaskEscrowGrantExpired
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        vm.warp(uint256(g.validUntil) + 1);
        bs[0].params[0].deadline = uint40(block.timestamp + 1 days);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantExpired.selector, g.validUntil));
        escrow.createWithGrants(bs);
    }

    function test_WhenExactlyValidUntil() public {
        // it should create the tasks
        ITaskEscrow.Grant memory g = _grant();
        vm.warp(g.validUntil);
        _createUnder(g, _grantParamsN(1));
        assertEq(_spent(g), AMOUNT, "spent");
    }

    function test_RevertWhen_RevokedBeforeFirstUse() public {
        // it should revert with TaskEscrowGrantRevoked
        ITaskEscrow.Grant memory g = _grant();
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        vm.prank(operator);
        _expectGrantRevoked(_digest(g));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_RevokedAfterFirstUse() public {
        // it should revert with TaskEscrowGrantRevoked, the tasks it funded unaffected
        ITaskEscrow.Grant memory g = _grant();
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(g, _grantParamsN(1));
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        vm.prank(operator);
        _expectGrantRevoked(_digest(g));
        escrow.createWithGrants(bs);
        // The task it funded still settles, to its executor.
        ITaskEscrow.Task memory t = _deliver(ids[0], ts[0]);
        uint256 before = usdc.balanceOf(executor);
        vm.prank(operator);
        escrow.approvePayment(ids[0], t, RATING);
        assertEq(usdc.balanceOf(executor), before + AMOUNT, "paid after revocation");
        assertEq(_spent(g), AMOUNT, "spent unchanged");
    }

    function test_RevertWhen_AnotherKeySigned() public {
        // it should revert with TaskEscrowGrantSignature
        ITaskEscrow.Grant memory g = _grant();
        _assertSignatureRefused(g, _signDigest(funderKey, _digest(g)));
    }

    function test_RevertWhen_SignedForAnotherChain() public {
        // it should revert with TaskEscrowGrantSignature
        ITaskEscrow.Grant memory g = _grant();
        _assertSignatureRefused(g, _signDigest(sponsorKey, _digestFor(g, block.chainid + 1, address(escrow))));
    }

    function test_RevertWhen_SignedForAnotherEscrow() public {
        // it should revert with TaskEscrowGrantSignature
        address other = address(_deployEscrow(address(usdc)));
        ITaskEscrow.Grant memory g = _grant();
        _assertSignatureRefused(g, _signDigest(sponsorKey, _digestFor(g, block.chainid, other)));
    }

    function test_RevertWhen_TermsDifferFromSigned() public {
        // it should revert with TaskEscrowGrantSignature
        ITaskEscrow.Grant memory g = _grant();
        bytes memory sig = _sign(g);
        g.budget = 10 * BUDGET;
        _assertSignatureRefused(g, sig);
    }

    function test_RevertWhen_SignatureMalformed() public {
        // it should revert with TaskEscrowGrantSignature
        ITaskEscrow.Grant memory g = _grant();
        bytes memory good = _sign(g);
        bytes[3] memory bad = [bytes(""), new bytes(65), abi.encodePacked(good, bytes1(0))];
        for (uint256 i; i < bad.length; ++i) {
            _assertSignatureRefused(g, bad[i]);
        }
    }

    function test_WhenWalletAccepts() public {
        // it should create the tasks funded by the wallet
        MockERC1271Wallet wallet = new MockERC1271Wallet(sponsor);
        _mint(address(wallet), 10 * AMOUNT);
        vm.prank(address(wallet));
        usdc.approve(address(escrow), type(uint256).max);
        ITaskEscrow.Grant memory g = _grantOf(address(wallet));
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        vm.prank(operator);
        uint256[] memory ids = escrow.createWithGrants(_one(g, _sign(g), ps));
        for (uint256 i; i < ids.length; ++i) {
            assertEq(ids[i], escrow.taskIdFor(address(wallet), ps[i].ref), "id from (wallet, ref)");
            _assertStored(ids[i], _expectedCreated(ps[i], address(wallet)));
        }
        assertEq(usdc.balanceOf(address(wallet)), 8 * AMOUNT, "the wallet paid");
        assertEq(_spent(g), 2 * AMOUNT, "spent");
    }

    function test_RevertWhen_WalletRefuses() public {
        // it should revert with TaskEscrowGrantSignature
        MockERC1271Wallet wallet = new MockERC1271Wallet(client);
        _mint(address(wallet), 10 * AMOUNT);
        vm.prank(address(wallet));
        usdc.approve(address(escrow), type(uint256).max);
        ITaskEscrow.Grant memory g = _grantOf(address(wallet));
        _assertSignatureRefused(g, _sign(g));
    }

    function test_RevertWhen_TaskOfAnotherPlan() public {
        // it should revert with TaskEscrowGrantPlan
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].planId = OTHER_PLAN;
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantPlan.selector, 1, OTHER_PLAN));
        escrow.createWithGrants(bs);
        // A grant reused for another plan: all of its tasks name that plan.
        ps = _grantParamsN(1);
        ps[0].planId = OTHER_PLAN;
        bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantPlan.selector, 0, OTHER_PLAN));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_ExecutorIsSponsorOperatorOrClient() public {
        // it should revert with TaskEscrowSelfDealing
        _registerExecutor(sponsor);
        _registerExecutor(operator);
        ITaskEscrow.Grant memory g = _grant();
        address[2] memory selves = [sponsor, operator];
        for (uint256 i; i < selves.length; ++i) {
            ITaskEscrow.CreateParams[] memory ps = _grantParamsN(1);
            ps[0].executor = selves[i];
            ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
            vm.prank(operator);
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, selves[i]));
            escrow.createWithGrants(bs);
        }
        ITaskEscrow.CreateParams[] memory qs = _grantParamsN(1);
        qs[0].client = executor;
        ITaskEscrow.GrantedBatch[] memory cs = _one(g, _sign(g), qs);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowSelfDealing.selector, executor));
        escrow.createWithGrants(cs);
    }

    function test_RevertWhen_OverBudgetInOneCall() public {
        // it should revert with TaskEscrowGrantBudget, funding nothing
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(4);
        uint256 before = usdc.balanceOf(sponsor);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        _expectGrantBudget(_digest(g), BUDGET, 4 * uint256(AMOUNT));
        escrow.createWithGrants(bs);
        assertEq(usdc.balanceOf(sponsor), before, "nothing funded");
        assertEq(_spent(g), 0, "nothing spent");
        assertEq(escrow.taskHash(escrow.taskIdFor(sponsor, ps[0].ref)), bytes32(0), "nothing created");
    }

    function test_RevertWhen_OverBudgetAcrossCalls() public {
        // it should revert with TaskEscrowGrantBudget once the calls' sum passes the budget
        ITaskEscrow.Grant memory g = _grant();
        _createUnder(g, _grantParamsN(2));
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(1);
        ps[0].amount = AMOUNT + 1;
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        _expectGrantBudget(_digest(g), BUDGET, 3 * uint256(AMOUNT) + 1);
        escrow.createWithGrants(bs);
        // Two batches of the same grant in one call count together.
        ITaskEscrow.GrantedBatch[] memory two = new ITaskEscrow.GrantedBatch[](2);
        two[0] = ITaskEscrow.GrantedBatch({grant: g, signature: "", params: _grantParamsN(1)});
        two[1] = ITaskEscrow.GrantedBatch({grant: g, signature: "", params: _grantParamsN(1)});
        vm.prank(operator);
        _expectGrantBudget(_digest(g), BUDGET, 4 * uint256(AMOUNT));
        escrow.createWithGrants(two);
        assertEq(_spent(g), 2 * AMOUNT, "spent");
    }

    function test_WhenMarkedFirstUseSpendsTheBudget() public {
        // it should create the mark, the task with id grantMarkId(grant), funded by the sponsor
        // it should write no slot: grantState reads zero spent, grantSpent the budget
        ITaskEscrow.Grant memory g = _grant();
        uint256 before = usdc.balanceOf(sponsor);
        ITaskEscrow.CreateParams[] memory ps = _fullMarkedParams(g);
        vm.record();
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(g, ps);
        (, bytes32[] memory writes) = vm.accesses(address(escrow));
        assertEq(ids[0], _markId(g), "the first task is the mark");
        assertEq(ts[0].funder, sponsor, "the mark is funded by the sponsor");
        assertEq(escrow.taskHash(_markId(g)), escrow.hashTask(ts[0]), "the mark is stored");
        assertEq(before - usdc.balanceOf(sponsor), BUDGET, "the sponsor paid the whole budget");
        // The only slots written hold the three tasks: none is the grant's.
        assertEq(writes.length, ps.length, "one write per task");
        for (uint256 i; i < writes.length; ++i) {
            bytes32 stored = vm.load(address(escrow), writes[i]);
            assertTrue(
                stored == escrow.hashTask(ts[0]) || stored == escrow.hashTask(ts[1])
                    || stored == escrow.hashTask(ts[2]),
                "each write is a task's hash"
            );
        }
        (uint128 spent, bool revoked) = escrow.grantState(_digest(g));
        assertEq(spent, 0, "grantState: no slot");
        assertFalse(revoked, "grantState: not revoked");
        (spent, revoked) = escrow.grantSpent(g);
        assertEq(spent, BUDGET, "grantSpent: the budget");
        assertFalse(revoked, "grantSpent: not revoked");
    }

    function test_WhenMarkedFirstUseSpendsTheBudget_Events() public {
        // it should emit one {TaskCreated} per task and no {GrantSpent}
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _fullMarkedParams(g);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.recordLogs();
        vm.prank(operator);
        escrow.createWithGrants(bs);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 created;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter != address(escrow)) continue;
            assertNotEq(logs[i].topics[0], ITaskEscrow.GrantSpent.selector, "no GrantSpent");
            if (logs[i].topics[0] == ITaskEscrow.TaskCreated.selector) {
                uint256 id = created == 0 ? _markId(g) : escrow.taskIdFor(sponsor, ps[created].ref);
                assertEq(logs[i].topics[1], bytes32(id), "in order, the mark first");
                ++created;
            }
        }
        assertEq(created, ps.length, "one TaskCreated per task");
    }

    function test_RevertWhen_MarkedFullUseReplayed() public {
        // it should revert with TaskEscrowGrantUsed, funding nothing
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        ITaskEscrow.CreateParams[] memory ps = _fullMarkedParams(g);
        _createUnder(g, ps);
        uint256 before = usdc.balanceOf(sponsor);
        ITaskEscrow.GrantedBatch[][4] memory replays = [
            // The same batch, signature and all.
            _one(g, _sign(g), ps),
            // Other params, without the digest as reference: what the budget would still allow if
            // the slot were read alone.
            _one(g, _sign(g), _grantParamsN(1)),
            // Other params with the digest as reference (a used one).
            _one(g, _sign(g), _markedParamsN(g, 1)),
            // No signature at all.
            _one(g, "", _grantParamsN(2))
        ];
        for (uint256 i; i < replays.length; ++i) {
            vm.prank(operator);
            _expectGrantUsed(d);
            escrow.createWithGrants(replays[i]);
        }
        assertEq(usdc.balanceOf(sponsor), before, "nothing funded");
        assertEq(_spentOf(g), BUDGET, "still the budget");
        assertEq(_spent(g), 0, "still no slot");
    }

    function test_RevertWhen_MarkedFullUseRepeatedInTheSameCall() public {
        // it should revert with TaskEscrowGrantUsed, the whole call with it
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        ITaskEscrow.GrantedBatch[] memory two = new ITaskEscrow.GrantedBatch[](2);
        two[0] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _fullMarkedParams(g)});
        two[1] = ITaskEscrow.GrantedBatch({grant: g, signature: _sign(g), params: _grantParamsN(1)});
        uint256 before = usdc.balanceOf(sponsor);
        vm.prank(operator);
        _expectGrantUsed(d);
        escrow.createWithGrants(two);
        assertEq(usdc.balanceOf(sponsor), before, "nothing funded");
        assertEq(escrow.taskHash(_markId(g)), bytes32(0), "no mark");
        assertEq(_spentOf(g), 0, "nothing spent");
    }

    function test_RevertWhen_RevokedAfterMarkedFullUse() public {
        // it should revert with TaskEscrowGrantRevoked
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        _createUnder(g, _fullMarkedParams(g));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantRevoked(d, sponsor, PLAN);
        vm.prank(sponsor);
        escrow.revokeGrant(g);
        assertTrue(_revoked(g), "revoked");
        (uint128 spent, bool revoked) = escrow.grantSpent(g);
        assertEq(spent, BUDGET, "grantSpent: still the budget");
        assertTrue(revoked, "grantSpent: revoked");
        ITaskEscrow.CreateParams[][2] memory uses = [_grantParamsN(1), _markedParamsN(g, 1)];
        for (uint256 i; i < uses.length; ++i) {
            ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), uses[i]);
            vm.prank(operator);
            _expectGrantRevoked(d);
            escrow.createWithGrants(bs);
        }
    }

    function test_WhenMarkedFirstUseSpendsPart() public {
        // it should write the slot and emit {GrantSpent} with what it spent
        // it should let later uses spend the rest, up to exactly the budget
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantSpent(d, sponsor, PLAN, AMOUNT);
        (uint256[] memory ids,) = _createUnder(g, _markedParamsN(g, 1));
        assertEq(ids[0], _markId(g), "the mark");
        assertEq(_spent(g), AMOUNT, "grantState: the slot");
        assertEq(_spentOf(g), AMOUNT, "grantSpent: the slot");
        // Later uses go on from the slot, without the signature.
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, "", _grantParamsN(2));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantSpent(d, sponsor, PLAN, BUDGET);
        vm.prank(operator);
        escrow.createWithGrants(bs);
        assertEq(_spent(g), BUDGET, "grantState: the budget");
        assertEq(_spentOf(g), BUDGET, "grantSpent: the budget");
        bs = _one(g, "", _grantParamsN(1));
        vm.prank(operator);
        _expectGrantBudget(d, BUDGET, BUDGET + uint256(AMOUNT));
        escrow.createWithGrants(bs);
    }

    function test_WhenDigestIsALaterTaskOfTheFirstUse() public {
        // it should create the mark there: a use that spends the whole budget writes no slot all the same
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(3);
        ps[2].ref = d;
        vm.recordLogs();
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(g, ps);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter != address(escrow)) continue;
            assertNotEq(logs[i].topics[0], ITaskEscrow.GrantSpent.selector, "no GrantSpent");
        }
        assertEq(ids[2], _markId(g), "the third task is the mark");
        assertEq(escrow.taskHash(_markId(g)), escrow.hashTask(ts[2]), "the mark is stored");
        assertEq(ids[0], escrow.taskIdFor(sponsor, ps[0].ref), "the others: ids from (sponsor, ref)");
        assertEq(_spent(g), 0, "grantState: no slot");
        assertEq(_spentOf(g), BUDGET, "grantSpent: the budget");
        // Used in full: a replay is refused as such.
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(1));
        vm.prank(operator);
        _expectGrantUsed(d);
        escrow.createWithGrants(bs);
    }

    function test_WhenALaterUseCreatesTheMark() public {
        // it should create the mark and write the slot: uses still count up to the budget
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        _createUnder(g, _grantParamsN(1));
        // The later use creates the mark (as its second task) and spends the rest of the budget: the
        // slot is written.
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].ref = d;
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantSpent(d, sponsor, PLAN, BUDGET);
        (uint256[] memory ids,) = _createUnder(g, ps);
        assertEq(ids[1], _markId(g), "the mark, created late");
        assertEq(_spent(g), BUDGET, "grantState: the budget");
        assertEq(_spentOf(g), BUDGET, "grantSpent: the budget");
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, "", _grantParamsN(1));
        vm.prank(operator);
        _expectGrantBudget(d, BUDGET, BUDGET + uint256(AMOUNT));
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_DigestReferencedAgain() public {
        // it should revert with TaskEscrowBatchDuplicate
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        _createUnder(g, _markedParamsN(g, 1));
        // A later use, the digest on its second task: the mark's id is taken.
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].ref = d;
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, "", ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 1, d));
        escrow.createWithGrants(bs);
        // Twice in one first use of another grant: the second is a duplicate of the first.
        ITaskEscrow.Grant memory h = _grant();
        h.nonce = 2;
        ps = _markedParamsN(h, 2);
        ps[1].ref = ps[0].ref;
        bs = _one(h, _signDigest(sponsorKey, _digest(h)), ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 1, _digest(h)));
        escrow.createWithGrants(bs);
        assertEq(_spent(g), AMOUNT, "g: its first use only");
        assertEq(_spentOf(h), 0, "h funded nothing");
    }

    function test_WhenTheSponsorReferencedATaskByTheDigest() public {
        // it should leave the grant usable: that task is not the mark
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        vm.prank(sponsor);
        uint256 own = escrow.createTask(_params(d));
        assertTrue(own != _markId(g), "a task id hashes two words, a mark three");
        (uint256[] memory ids,) = _createUnder(g, _markedParamsN(g, 1));
        assertEq(ids[0], _markId(g), "the grant's first use made its mark");
        assertEq(_spent(g), AMOUNT, "the grant funded its task");
    }

    function test_WhenAnotherGrantReferencedATaskByTheDigest() public {
        // it should leave the grant usable: that task is not the mark
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = _digest(g);
        // Another grant of the same sponsor, to another operator, funds a task referenced by g's digest.
        ITaskEscrow.Grant memory h = _grant();
        h.operator = stranger;
        h.nonce = 2;
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(1);
        ps[0].ref = d;
        (uint256[] memory other,) = _createUnder(h, ps);
        assertEq(other[0], escrow.taskIdFor(sponsor, d), "an ordinary task of h");
        (uint256[] memory ids,) = _createUnder(g, _markedParamsN(g, 1));
        assertEq(ids[0], _markId(g), "g's first use made its mark");
        assertEq(_spent(g), AMOUNT, "g funded its task");
        assertEq(_spent(h), AMOUNT, "h funded the task");
    }

    function test_RevertWhen_AllowanceShort() public {
        // it should revert with ERC20InsufficientAllowance
        vm.prank(sponsor);
        usdc.approve(address(escrow), AMOUNT);
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), _grantParamsN(2));
        vm.prank(operator);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), AMOUNT, 2 * AMOUNT
            )
        );
        escrow.createWithGrants(bs);
    }

    function test_RevertWhen_TaskFailsACreateCheck() public {
        // it should revert with TaskEscrowZeroAmount (or whichever error createTasks gives)
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        ps[1].amount = 0;
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowZeroAmount.selector));
        escrow.createWithGrants(bs);
        ps = _grantParamsN(2);
        ps[1].ref = ps[0].ref;
        bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowBatchDuplicate.selector, 1, ps[0].ref));
        escrow.createWithGrants(bs);
    }

    function test_RefundOnCancel() public {
        // it should refund the sponsor on cancelTask
        (uint256 id, ITaskEscrow.Task memory t) = _createGranted();
        uint256 before = usdc.balanceOf(sponsor);
        vm.prank(operator);
        escrow.cancelTask(id, t);
        assertEq(usdc.balanceOf(sponsor), before + AMOUNT, "sponsor refunded");
    }

    function test_RefundOnExpiry() public {
        // it should refund the sponsor on refundExpired
        (uint256 id, ITaskEscrow.Task memory t) = _createGranted();
        uint256 before = usdc.balanceOf(sponsor);
        vm.warp(uint256(t.deadline) + 1);
        vm.prank(stranger);
        escrow.refundExpired(id, t);
        assertEq(usdc.balanceOf(sponsor), before + AMOUNT, "sponsor refunded");
    }

    function test_RefundOnDecline() public {
        // it should refund the sponsor on declineTask
        (uint256 id, ITaskEscrow.Task memory t) = _createGranted();
        uint256 before = usdc.balanceOf(sponsor);
        vm.prank(executor);
        escrow.declineTask(id, t, DECLINE_REASON);
        assertEq(usdc.balanceOf(sponsor), before + AMOUNT, "sponsor refunded");
    }

    function test_RefundOnDisputeForClient() public {
        // it should refund the sponsor on a dispute ruled for the client
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _createGranted();
        t = _deliver(id, t);
        t = _dispute(id, t);
        uint256 before = usdc.balanceOf(sponsor);
        uint256 operatorBefore = usdc.balanceOf(operator);
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, 0, "ipfs://rationale");
        assertEq(usdc.balanceOf(sponsor), before + AMOUNT, "sponsor refunded");
        assertEq(usdc.balanceOf(operator), operatorBefore, "nothing to the operator, the client");
    }

    function test_WhenEveryCheckPasses() public {
        // it should store each task with the sponsor as funder, ids derived from (sponsor, ref)
        // it should pull the sum from the sponsor, none from the operator
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(3);
        ps[1].executor = executor2;
        uint256 sponsorBefore = usdc.balanceOf(sponsor);
        uint256 escrowBefore = usdc.balanceOf(address(escrow));
        _createUnder(g, ps);
        assertEq(usdc.balanceOf(sponsor), sponsorBefore - BUDGET, "sponsor paid the sum");
        assertEq(usdc.balanceOf(operator), 0, "operator paid nothing");
        assertEq(usdc.balanceOf(address(escrow)), escrowBefore + BUDGET, "escrow holds the sum");
    }

    function test_WhenEveryCheckPasses_Events() public {
        // it should emit one {TaskCreated} per task, then {GrantSpent} with the grant's spent total
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.CreateParams[] memory ps = _grantParamsN(2);
        for (uint256 i; i < ps.length; ++i) {
            vm.expectEmit(address(escrow));
            emit ITaskEscrow.TaskCreated(
                escrow.taskIdFor(sponsor, ps[i].ref),
                PLAN,
                ps[i].parentId,
                ps[i].ref,
                CAPABILITY,
                _expectedCreated(ps[i], sponsor),
                ps[i].specURI
            );
        }
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.GrantSpent(_digest(g), sponsor, PLAN, 2 * AMOUNT);
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, _sign(g), ps);
        vm.prank(operator);
        escrow.createWithGrants(bs);
    }

    function test_SignatureCheckedOnFirstUseOnly() public {
        // it should check the signature on the grant's first use only
        ITaskEscrow.Grant memory g = _grant();
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, "", _grantParamsN(1));
        vm.prank(operator);
        _expectGrantSignature(_digest(g));
        escrow.createWithGrants(bs);
        _createUnder(g, _grantParamsN(1));
        // The digest is proven now: the operator need not send the signature again.
        bs = _one(g, "", _grantParamsN(1));
        vm.prank(operator);
        escrow.createWithGrants(bs);
        assertEq(_spent(g), 2 * AMOUNT, "spent");
    }

    function test_SpendsAddUpToExactlyTheBudget() public {
        // it should add up what several calls spend, up to exactly the budget
        ITaskEscrow.Grant memory g = _grant();
        for (uint256 i = 1; i <= 3; ++i) {
            _createUnder(g, _grantParamsN(1));
            assertEq(_spent(g), i * AMOUNT, "spent so far");
        }
        assertEq(_spent(g), BUDGET, "exactly the budget");
        assertFalse(_revoked(g), "not revoked");
    }

    function test_SeveralGrantsInOneCall() public {
        // it should take batches under several grants and sponsors in one call
        MockERC1271Wallet wallet = new MockERC1271Wallet(sponsor);
        _mint(address(wallet), BUDGET);
        vm.prank(address(wallet));
        usdc.approve(address(escrow), type(uint256).max);
        ITaskEscrow.Grant memory a = _grant();
        ITaskEscrow.Grant memory b = _grantOf(address(wallet));
        b.planId = OTHER_PLAN;
        ITaskEscrow.CreateParams[] memory pa = _grantParamsN(2);
        ITaskEscrow.CreateParams[] memory pb = _grantParamsN(1);
        pb[0].planId = OTHER_PLAN;
        ITaskEscrow.GrantedBatch[] memory bs = new ITaskEscrow.GrantedBatch[](2);
        bs[0] = ITaskEscrow.GrantedBatch({grant: a, signature: _sign(a), params: pa});
        bs[1] = ITaskEscrow.GrantedBatch({grant: b, signature: _sign(b), params: pb});
        vm.prank(operator);
        uint256[] memory ids = escrow.createWithGrants(bs);
        assertEq(ids.length, 3, "three tasks");
        assertEq(ids[0], escrow.taskIdFor(sponsor, pa[0].ref), "first of a");
        assertEq(ids[1], escrow.taskIdFor(sponsor, pa[1].ref), "second of a");
        assertEq(ids[2], escrow.taskIdFor(address(wallet), pb[0].ref), "b's");
        assertEq(_spent(a), 2 * AMOUNT, "a spent");
        assertEq(_spent(b), AMOUNT, "b spent");
        assertEq(usdc.balanceOf(address(wallet)), BUDGET - AMOUNT, "the wallet paid b");
    }
}
