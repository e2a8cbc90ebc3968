// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {GrantBase} from "../GrantBase.sol";

/// @notice Mirrors grantDigest.tree.
contract GrantDigestTest is GrantBase {
    function test_EqualsEip712Digest() public view {
        // it should equal the EIP-712 digest of the grant under this chain and escrow's domain
        ITaskEscrow.Grant memory g = _grant();
        assertEq(escrow.grantDigest(g), _digest(g), "digest");
        (, string memory name, string memory version, uint256 chainId, address verifying,,) =
            escrow.eip712Domain();
        assertEq(name, "Tessera TaskEscrow", "name");
        assertEq(version, "1", "version");
        assertEq(chainId, block.chainid, "chain id");
        assertEq(verifying, address(escrow), "verifying contract");
        assertEq(
            escrow.GRANT_TYPEHASH(),
            keccak256(
                "Grant(address sponsor,bytes32 planId,address operator,uint128 budget,uint40 validUntil,uint256 nonce)"
            ),
            "type hash"
        );
    }

    function test_ChangesWithEveryField() public view {
        // it should change with every field of the grant
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = escrow.grantDigest(g);
        ITaskEscrow.Grant[6] memory vs;
        for (uint256 i; i < 6; ++i) {
            vs[i] = _grant();
        }
        vs[0].sponsor = stranger;
        vs[1].planId = OTHER_PLAN;
        vs[2].operator = stranger;
        vs[3].budget = BUDGET + 1;
        vs[4].validUntil = g.validUntil + 1;
        vs[5].nonce = g.nonce + 1;
        for (uint256 i; i < 6; ++i) {
            assertNotEq(escrow.grantDigest(vs[i]), d, "a field changed");
            assertEq(escrow.grantDigest(vs[i]), _digest(vs[i]), "still the EIP-712 digest");
        }
    }

    function test_ChangesWithChainAndEscrow() public {
        // it should change with the chain id and with the escrow
        ITaskEscrow.Grant memory g = _grant();
        bytes32 d = escrow.grantDigest(g);
        address other = address(_deployEscrow(address(usdc)));
        assertNotEq(ITaskEscrow(other).grantDigest(g), d, "another escrow");
        assertEq(ITaskEscrow(other).grantDigest(g), _digestFor(g, block.chainid, other), "its own domain");
        vm.chainId(block.chainid + 1);
        assertNotEq(escrow.grantDigest(g), d, "another chain");
        assertEq(
            escrow.grantDigest(g), _digestFor(g, block.chainid, address(escrow)), "the new chain's domain"
        );
    }
}
