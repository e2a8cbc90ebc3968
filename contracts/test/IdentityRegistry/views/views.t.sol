// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IdentityBase} from "../IdentityBase.t.sol";

contract Views_Identity_Unit_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
    }

    function test_RevertWhen_WalletOfUnknownAgent() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(2);
        identity.getAgentWallet(2);
    }

    function test_RevertWhen_AuthorizedOnUnknownAgent() public {
        // it should revert with ERC721NonexistentToken
        _expectNonexistent(2);
        identity.isAuthorizedOrOwner(agentOwner, 2);
    }

    function test_getAgentWallet() public {
        // it should return the proven wallet, the owner after registration
        assertEq(identity.getAgentWallet(agentId), agentOwner, "the owner after registration");
        _setWallet(agentId);
        assertEq(identity.getAgentWallet(agentId), wallet, "the proven wallet");
    }

    function test_walletNonce() public {
        // it should start at zero and count the wallet's proofs that landed, not the refused ones
        assertEq(identity.walletNonce(wallet), 0, "zero");
        uint256 deadline = block.timestamp + 60;
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, deadline);
        vm.prank(stranger);
        vm.expectRevert();
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.walletNonce(wallet), 0, "a refused proof uses nothing");
        _setWallet(agentId);
        assertEq(identity.walletNonce(wallet), 1, "one landed");
        _setWallet(agentId);
        assertEq(identity.walletNonce(wallet), 2, "two landed");
    }

    function test_agentWalletDigest() public {
        // it should be the spec's digest for the wallet's current nonce
        uint256 deadline = block.timestamp + 60;
        bytes32 first = identity.agentWalletDigest(agentId, wallet, agentOwner, deadline);
        assertEq(first, _walletDigest(agentId, wallet, agentOwner, 0, deadline), "nonce 0");
        _setWallet(agentId);
        bytes32 second = identity.agentWalletDigest(agentId, wallet, agentOwner, deadline);
        assertEq(second, _walletDigest(agentId, wallet, agentOwner, 1, deadline), "nonce 1");
        assertTrue(first != second, "a new digest once the nonce is used");
    }

    function test_isAuthorizedOrOwner() public {
        // it should be true for the owner, an operator and the approved address only
        assertTrue(identity.isAuthorizedOrOwner(agentOwner, agentId), "owner");
        assertFalse(identity.isAuthorizedOrOwner(operator, agentId), "not yet operator");
        assertFalse(identity.isAuthorizedOrOwner(address(0), agentId), "zero");
        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        assertTrue(identity.isAuthorizedOrOwner(operator, agentId), "operator");
        vm.prank(agentOwner);
        identity.approve(stranger, agentId);
        assertTrue(identity.isAuthorizedOrOwner(stranger, agentId), "approved");
        // The proven wallet is paid; it does not manage the agent.
        _setWallet(agentId);
        assertFalse(identity.isAuthorizedOrOwner(wallet, agentId), "wallet");
    }

    function test_getMetadata_UnknownAgentOrKey() public view {
        // it should return the stored value, empty for an unknown agent or key
        assertEq(identity.getMetadata(agentId, "nothing"), bytes(""), "unknown key");
        assertEq(identity.getMetadata(99, "model"), bytes(""), "unknown agent");
        assertEq(identity.getMetadata(99, WALLET_KEY), bytes(""), "unknown agent's wallet");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "owner is the first wallet");
    }

    function test_agentCount() public {
        // it should count every registration
        assertEq(identity.agentCount(), 1, "one");
        _mintAgent(stranger);
        assertEq(identity.agentCount(), 2, "two");
    }

    function test_supportsInterface() public view {
        // it should claim ERC-721, ERC-721 metadata and ERC-4906
        assertTrue(identity.supportsInterface(0x80ac58cd), "ERC-721");
        assertTrue(identity.supportsInterface(0x5b5e139f), "ERC-721 metadata");
        assertTrue(identity.supportsInterface(0x49064906), "ERC-4906");
        assertFalse(identity.supportsInterface(0xffffffff), "none");
    }
}
