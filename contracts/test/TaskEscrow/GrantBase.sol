// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "./EscrowBase.sol";

/// @notice Helpers shared by the grant tests: a sponsor who only signs, an
/// operator who spends its grants, the EIP-712 digest computed independently of
/// the contract, and granted batches built from the fixture's params.
abstract contract GrantBase is EscrowBase {
    /// @dev What the test grants allow: three tasks of {AMOUNT}.
    uint128 internal constant BUDGET = 3 * AMOUNT;
    bytes32 internal constant OTHER_PLAN = keccak256("plan-2");

    address internal sponsor;
    uint256 internal sponsorKey;
    address internal operator;

    function setUp() public virtual override {
        super.setUp();
        (sponsor, sponsorKey) = makeKey("sponsor");
        operator = makeAddr("operator");
        _mint(sponsor, 1_000_000_000_000);
        vm.prank(sponsor);
        usdc.approve(address(escrow), type(uint256).max);
    }

    /// @dev A grant of {BUDGET} for {PLAN} to `operator`, valid for a week.
    function _grant() internal view returns (ITaskEscrow.Grant memory) {
        return _grantOf(sponsor);
    }

    function _grantOf(address who) internal view returns (ITaskEscrow.Grant memory) {
        return ITaskEscrow.Grant({
            sponsor: who,
            planId: PLAN,
            operator: operator,
            budget: BUDGET,
            validUntil: uint40(block.timestamp + 7 days),
            nonce: 1
        });
    }

    /// @dev The EIP-712 digest of `g` for `verifyingContract` on `chainId`,
    /// computed from the spec rather than by the contract.
    function _digestFor(ITaskEscrow.Grant memory g, uint256 chainId, address verifyingContract)
        internal
        pure
        returns (bytes32)
    {
        bytes32 domain = keccak256(
            abi.encode(
                keccak256(
                    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
                ),
                keccak256("Tessera TaskEscrow"),
                keccak256("1"),
                chainId,
                verifyingContract
            )
        );
        bytes32 structHash = keccak256(
            abi.encode(
                keccak256(
                    "Grant(address sponsor,bytes32 planId,address operator,uint128 budget,uint40 validUntil,uint256 nonce)"
                ),
                g.sponsor,
                g.planId,
                g.operator,
                g.budget,
                g.validUntil,
                g.nonce
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }

    function _digest(ITaskEscrow.Grant memory g) internal view returns (bytes32) {
        return _digestFor(g, block.chainid, address(escrow));
    }

    function _signDigest(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }

    function _sign(ITaskEscrow.Grant memory g) internal view returns (bytes memory) {
        return _signDigest(sponsorKey, _digest(g));
    }

    /// @dev Params of a task under a grant: the operator is its client.
    function _grantParams() internal returns (ITaskEscrow.CreateParams memory p) {
        p = _params(_nextRef());
        p.client = operator;
    }

    function _grantParamsN(uint256 n) internal returns (ITaskEscrow.CreateParams[] memory ps) {
        ps = new ITaskEscrow.CreateParams[](n);
        for (uint256 i; i < n; ++i) {
            ps[i] = _grantParams();
        }
    }

    function _one(ITaskEscrow.Grant memory g, bytes memory sig, ITaskEscrow.CreateParams[] memory ps)
        internal
        pure
        returns (ITaskEscrow.GrantedBatch[] memory bs)
    {
        bs = new ITaskEscrow.GrantedBatch[](1);
        bs[0] = ITaskEscrow.GrantedBatch({grant: g, signature: sig, params: ps});
    }

    /// @dev The operator creates `ps` under `g` (signed by the sponsor's key);
    /// checks every stored task and returns the ids and states.
    function _createUnder(ITaskEscrow.Grant memory g, ITaskEscrow.CreateParams[] memory ps)
        internal
        returns (uint256[] memory ids, ITaskEscrow.Task[] memory ts)
    {
        ts = new ITaskEscrow.Task[](ps.length);
        for (uint256 i; i < ps.length; ++i) {
            ts[i] = _expectedCreated(ps[i], g.sponsor);
        }
        vm.prank(g.operator);
        ids = escrow.createWithGrants(_one(g, _sign(g), ps));
        for (uint256 i; i < ps.length; ++i) {
            // The grant's task referenced by its digest, wherever it stands, is its mark.
            uint256 expected = ps[i].ref == _digest(g) ? _markId(g) : escrow.taskIdFor(g.sponsor, ps[i].ref);
            assertEq(ids[i], expected, "id from (sponsor, ref), or the mark's");
            _assertStored(ids[i], ts[i]);
        }
    }

    /// @dev One task under the default grant.
    function _createGranted() internal returns (uint256 id, ITaskEscrow.Task memory t) {
        (uint256[] memory ids, ITaskEscrow.Task[] memory ts) = _createUnder(_grant(), _grantParamsN(1));
        return (ids[0], ts[0]);
    }

    function _spent(ITaskEscrow.Grant memory g) internal view returns (uint128 spent) {
        (spent,) = escrow.grantState(_digest(g));
    }

    /// @dev What `g` funded as {grantSpent} counts it: a marked first use that
    /// spent the whole budget counts as the budget, where {_spent} reads zero.
    function _spentOf(ITaskEscrow.Grant memory g) internal view returns (uint128 spent) {
        (spent,) = escrow.grantSpent(g);
    }

    /// @dev `n` params of tasks under `g` whose first has the grant's digest as
    /// reference: a first use of `g` with them creates its mark.
    function _markedParamsN(ITaskEscrow.Grant memory g, uint256 n)
        internal
        returns (ITaskEscrow.CreateParams[] memory ps)
    {
        ps = _grantParamsN(n);
        ps[0].ref = _digest(g);
    }

    /// @dev The id of `g`'s mark, from the spec: `keccak256(abi.encode(sponsor,
    /// digest, 1))`, three words where a task id hashes two.
    function _markId(ITaskEscrow.Grant memory g) internal view returns (uint256) {
        return uint256(keccak256(abi.encode(g.sponsor, _digest(g), uint256(1))));
    }

    /// @dev Params of a first use of `g` that creates its mark and spends its
    /// whole budget: three tasks, the first referenced by the digest, of a third
    /// of it each (the default grant: three of {AMOUNT}).
    function _fullMarkedParams(ITaskEscrow.Grant memory g)
        internal
        returns (ITaskEscrow.CreateParams[] memory ps)
    {
        ps = _markedParamsN(g, 3);
        for (uint256 i; i < 3; ++i) {
            ps[i].amount = g.budget / 3;
        }
        ps[2].amount = g.budget - 2 * (g.budget / 3);
    }

    function _revoked(ITaskEscrow.Grant memory g) internal view returns (bool revoked) {
        (, revoked) = escrow.grantState(_digest(g));
    }

    function _expectGrantOperator(address caller) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantOperator.selector, caller));
    }

    function _expectGrantSignature(bytes32 digest) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantSignature.selector, digest));
    }

    /// @dev The operator's creation of one task under `g` with `sig` reverts
    /// with TaskEscrowGrantSignature.
    function _assertSignatureRefused(ITaskEscrow.Grant memory g, bytes memory sig) internal {
        ITaskEscrow.GrantedBatch[] memory bs = _one(g, sig, _grantParamsN(1));
        vm.prank(operator);
        _expectGrantSignature(_digest(g));
        escrow.createWithGrants(bs);
    }

    function _expectGrantUsed(bytes32 digest) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantUsed.selector, digest));
    }

    function _expectGrantRevoked(bytes32 digest) internal {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantRevoked.selector, digest));
    }

    function _expectGrantBudget(bytes32 digest, uint128 budget, uint256 wouldSpend) internal {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowGrantBudget.selector, digest, budget, wouldSpend)
        );
    }
}
