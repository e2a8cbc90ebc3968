// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

/// @notice Fuzz tests: any key and value round-trip but the reserved one, any
/// wallet key proves its own address inside the deadline window and nowhere
/// else, and any transfer clears the wallet.
contract Identity_Fuzz_Test is IdentityBase {
    uint256 internal agentId;

    function setUp() public override {
        IdentityBase.setUp();
        agentId = _mintAgent(agentOwner);
    }

    function testFuzz_setMetadata_RoundTrips(string calldata key, bytes calldata value) public {
        vm.prank(agentOwner);
        if (keccak256(bytes(key)) == keccak256(bytes(WALLET_KEY))) {
            vm.expectRevert(
                abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryReservedKey.selector, key)
            );
            identity.setMetadata(agentId, key, value);
            return;
        }
        identity.setMetadata(agentId, key, value);
        assertEq(identity.getMetadata(agentId, key), value, "value");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet untouched");
    }

    function testFuzz_setAgentWallet_DeadlineWindow(uint256 key, uint256 offset, bool past) public {
        key = bound(key, 1, 2 ** 128);
        address newWallet = vm.addr(key);
        uint256 delay = identity.MAX_DEADLINE_DELAY();
        offset = bound(offset, 0, 3 * delay);
        uint256 deadline = past ? block.timestamp - offset : block.timestamp + offset;
        bytes memory sig = _walletProof(key, agentId, newWallet, agentOwner, deadline);
        if (past && offset > 0) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IIdentityRegistry.IdentityRegistryExpired.selector, deadline, block.timestamp
                )
            );
        } else if (!past && offset > delay) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IIdentityRegistry.IdentityRegistryDeadlineTooFar.selector,
                    deadline,
                    block.timestamp + delay
                )
            );
        }
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, newWallet, deadline, sig);
        bool accepted = offset == 0 || (!past && offset <= delay);
        assertEq(identity.getAgentWallet(agentId), accepted ? newWallet : agentOwner, "wallet");
    }

    function testFuzz_setAgentWallet_OnlyTheWalletsKey(uint256 signerKey, uint256 walletKey_) public {
        signerKey = bound(signerKey, 1, 2 ** 128);
        walletKey_ = bound(walletKey_, 1, 2 ** 128);
        address newWallet = vm.addr(walletKey_);
        uint256 deadline = block.timestamp + 1;
        bytes memory sig = _walletProof(signerKey, agentId, newWallet, agentOwner, deadline);
        if (vm.addr(signerKey) != newWallet) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IIdentityRegistry.IdentityRegistryInvalidWalletSignature.selector, newWallet
                )
            );
        }
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, newWallet, deadline, sig);
    }

    function testFuzz_transfer_ClearsWallet(address to) public {
        vm.assume(to != address(0) && to != agentOwner && to.code.length == 0);
        _setWallet(agentId);
        vm.prank(agentOwner);
        identity.transferFrom(agentOwner, to, agentId);
        assertEq(identity.getAgentWallet(agentId), address(0), "cleared");
        assertTrue(identity.isAuthorizedOrOwner(to, agentId), "new owner manages");
        assertFalse(identity.isAuthorizedOrOwner(agentOwner, agentId), "old owner does not");
    }
}
