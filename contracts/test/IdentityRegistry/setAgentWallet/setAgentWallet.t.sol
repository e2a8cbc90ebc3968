// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {MockERC1271Wallet} from "../../mocks/MockERC1271Wallet.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract SetAgentWallet_Unit_Test is IdentityBase {
    uint256 internal agentId;
    uint256 internal deadline;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
        deadline = block.timestamp + 60;
    }

    function _proof() internal view returns (bytes memory) {
        return _walletProof(walletKey, agentId, wallet, agentOwner, deadline);
    }

    function _expectInvalid(address newWallet) internal {
        vm.expectRevert(
            abi.encodeWithSelector(
                IIdentityRegistry.IdentityRegistryInvalidWalletSignature.selector, newWallet
            )
        );
    }

    function test_RevertWhen_AgentUnknown() public {
        // it should revert with ERC721NonexistentToken
        bytes memory sig = _proof();
        _expectNonexistent(5);
        vm.prank(agentOwner);
        identity.setAgentWallet(5, wallet, deadline, sig);
    }

    function test_RevertWhen_CallerNotAuthorized() public {
        // it should revert with IdentityRegistryNotAuthorized
        bytes memory sig = _proof();
        _expectNotAuthorized(agentId, wallet);
        // Even the wallet itself cannot attach itself: the owner decides.
        vm.prank(wallet);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
    }

    function test_RevertWhen_WalletZero() public {
        // it should revert with IdentityRegistryZeroWallet
        bytes memory sig = _proof();
        vm.expectRevert(abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryZeroWallet.selector));
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, address(0), deadline, sig);
    }

    function test_RevertWhen_DeadlinePassed() public {
        // it should revert with IdentityRegistryExpired
        bytes memory sig = _proof();
        vm.warp(deadline + 1);
        vm.expectRevert(
            abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryExpired.selector, deadline, deadline + 1)
        );
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
    }

    function test_RevertWhen_DeadlineTooFar() public {
        // it should revert with IdentityRegistryDeadlineTooFar
        uint256 far = block.timestamp + identity.MAX_DEADLINE_DELAY() + 1;
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, far);
        vm.expectRevert(
            abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryDeadlineTooFar.selector, far, far - 1)
        );
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, far, sig);
    }

    function test_RevertWhen_SignatureNotTheWallets() public {
        // it should revert with IdentityRegistryInvalidWalletSignature
        uint256 other = _mintAgent(agentOwner);
        bytes[4] memory forged = [
            _walletProof(agentOwnerKey, agentId, wallet, agentOwner, deadline), // another key
            _walletProof(walletKey, other, wallet, agentOwner, deadline), // another agent
            _walletProof(walletKey, agentId, wallet, stranger, deadline), // another owner
            _walletProof(walletKey, agentId, wallet, agentOwner, deadline + 1) // another deadline
        ];
        for (uint256 i; i < forged.length; ++i) {
            _expectInvalid(wallet);
            vm.prank(agentOwner);
            identity.setAgentWallet(agentId, wallet, deadline, forged[i]);
        }
        _expectInvalid(wallet);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, hex"00");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet unchanged");
    }

    function test_RevertWhen_ContractWalletRejects() public {
        // it should revert with IdentityRegistryInvalidWalletSignature
        MockERC1271Wallet smart = new MockERC1271Wallet(wallet);
        // Signed by a key the contract wallet does not accept.
        bytes memory sig = _walletProof(agentOwnerKey, agentId, address(smart), agentOwner, deadline);
        _expectInvalid(address(smart));
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, address(smart), deadline, sig);
    }

    /// @dev A proof that landed once is spent: the owner (or an operator) cannot
    /// send it again within its deadline to bring the wallet back after an unset,
    /// after the agent went away and came back, or onto another of its agents.
    function test_RevertWhen_ProofReplayed() public {
        // it should revert with IdentityRegistryInvalidWalletSignature
        bytes memory sig = _proof();
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        // Unset, then the same proof again.
        vm.startPrank(agentOwner);
        identity.unsetAgentWallet(agentId);
        _expectInvalid(wallet);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        // Transferred away and back (which clears the wallet), then the same proof.
        identity.transferFrom(agentOwner, stranger, agentId);
        vm.stopPrank();
        vm.prank(stranger);
        identity.transferFrom(stranger, agentOwner, agentId);
        vm.prank(agentOwner);
        _expectInvalid(wallet);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.getAgentWallet(agentId), address(0), "still cleared");
        // A proof for a second agent, spent on it, is refused on it after an unset.
        uint256 other = _mintAgent(agentOwner);
        bytes memory forOther = _walletProof(walletKey, other, wallet, agentOwner, deadline);
        vm.startPrank(agentOwner);
        identity.setAgentWallet(other, wallet, deadline, forOther);
        identity.unsetAgentWallet(other);
        _expectInvalid(wallet);
        identity.setAgentWallet(other, wallet, deadline, forOther);
        vm.stopPrank();
        // A fresh proof, for the next nonce, is taken.
        sig = _proof();
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.getAgentWallet(agentId), wallet, "a fresh proof lands");
        assertEq(identity.walletNonce(wallet), 3, "three proofs landed");
    }

    /// @dev A proof for a nonce already used, or one not reached yet, is not the wallet's proof now.
    function test_RevertWhen_ProofForAnotherNonce() public {
        // it should revert with IdentityRegistryInvalidWalletSignature
        bytes memory ahead = _sign(walletKey, _walletDigest(agentId, wallet, agentOwner, 1, deadline));
        _expectInvalid(wallet);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, ahead);
        _setWallet(agentId);
        bytes memory behind = _sign(walletKey, _walletDigest(agentId, wallet, agentOwner, 0, deadline));
        vm.prank(agentOwner);
        identity.unsetAgentWallet(agentId);
        _expectInvalid(wallet);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, behind);
        // The one signed ahead now fits.
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, ahead);
        assertEq(identity.getAgentWallet(agentId), wallet, "the nonce-1 proof lands second");
    }

    function test_setAgentWallet_UsesUpTheNonce() public {
        // it should use up the wallet's nonce, and no other wallet's
        assertEq(identity.walletNonce(wallet), 0, "fresh");
        bytes memory sig = _proof();
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.walletNonce(wallet), 1, "used up");
        assertEq(identity.walletNonce(agentOwner), 0, "the owner's untouched");
        assertEq(identity.walletNonce(operator), 0, "another wallet's untouched");
    }

    function test_setAgentWallet_ECDSA() public {
        // it should make it the agent wallet
        // it should answer it under the agentWallet metadata key
        // it should emit {MetadataSet} for agentWallet
        bytes memory sig = _proof();
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(agentId, WALLET_KEY, WALLET_KEY, abi.encodePacked(wallet));
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.getAgentWallet(agentId), wallet, "wallet");
        assertEq(identity.getMetadata(agentId, WALLET_KEY), abi.encodePacked(wallet), "metadata");
    }

    function test_setAgentWallet_ERC1271() public {
        // it should make it the agent wallet
        MockERC1271Wallet smart = new MockERC1271Wallet(wallet);
        bytes memory sig = _walletProof(walletKey, agentId, address(smart), agentOwner, deadline);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, address(smart), deadline, sig);
        assertEq(identity.getAgentWallet(agentId), address(smart), "contract wallet");
    }

    function test_setAgentWallet_ByOperatorSignedForOwner() public {
        // it should make it the agent wallet
        vm.prank(agentOwner);
        identity.setApprovalForAll(operator, true);
        // The proof names the agent's owner, whoever sends it.
        bytes memory sig = _proof();
        vm.prank(operator);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
        assertEq(identity.getAgentWallet(agentId), wallet, "wallet");
    }

    function test_setAgentWallet_DeadlineBounds() public {
        // it should accept a deadline of now and of now plus MAX_DEADLINE_DELAY
        uint256 latest = block.timestamp + identity.MAX_DEADLINE_DELAY();
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, latest);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, latest, sig);
        uint256 now_ = block.timestamp;
        sig = _walletProof(uint256(keccak256("operator")), agentId, operator, agentOwner, now_);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, operator, now_, sig);
        assertEq(identity.getAgentWallet(agentId), operator, "second wallet");
    }
}
