// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC721Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";

import {IIdentityRegistry} from "../../src/interfaces/IIdentityRegistry.sol";
import {Base} from "../Base.t.sol";

/// @notice Shared fixture for the ERC-8004 registries' tests: agents minted in
/// the fixture's identity registry, wallet proofs signed as the spec says
/// (the digest rebuilt here from the EIP-712 definitions, not read from the
/// contract), and the owner's and wallet's keys.
abstract contract IdentityBase is Base {
    string internal constant AGENT_URI = "ipfs://registration-1";
    string internal constant AGENT_URI_2 = "https://agent.example/registration.json";
    string internal constant WALLET_KEY = "agentWallet";

    bytes32 internal constant WALLET_TYPEHASH = keccak256(
        "AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 nonce,uint256 deadline)"
    );

    /// @dev The agent's owner, with a key, and a wallet it proves, with a key.
    address internal agentOwner;
    uint256 internal agentOwnerKey;
    address internal wallet;
    uint256 internal walletKey;
    /// @dev An address the owner approves for all its tokens.
    address internal operator;

    /// @dev The identity tests start from empty registries.
    function _registerExecutors() internal virtual override {}

    function setUp() public virtual override {
        Base.setUp();
        (agentOwner, agentOwnerKey) = makeKey("agentOwner");
        (wallet, walletKey) = makeKey("wallet");
        operator = makeAddr("operator");
    }

    /// @dev `who` registers an agent with {AGENT_URI}.
    function _mintAgent(address who) internal returns (uint256 agentId) {
        vm.prank(who);
        agentId = identity.register(AGENT_URI);
    }

    /// @dev The EIP-712 digest of the wallet proof, built from the spec's domain
    /// and struct, for the wallet's current nonce.
    function _walletDigest(uint256 agentId, address newWallet, address owner_, uint256 deadline)
        internal
        view
        returns (bytes32)
    {
        return _walletDigest(agentId, newWallet, owner_, identity.walletNonce(newWallet), deadline);
    }

    /// @dev The EIP-712 digest of the wallet proof for `nonce`.
    function _walletDigest(
        uint256 agentId,
        address newWallet,
        address owner_,
        uint256 nonce,
        uint256 deadline
    ) internal view returns (bytes32) {
        bytes32 domain = keccak256(
            abi.encode(
                keccak256(
                    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
                ),
                keccak256("ERC8004IdentityRegistry"),
                keccak256("1"),
                block.chainid,
                address(identity)
            )
        );
        bytes32 structHash =
            keccak256(abi.encode(WALLET_TYPEHASH, agentId, newWallet, owner_, nonce, deadline));
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }

    /// @dev `key`'s 65-byte ECDSA signature of `digest`.
    function _sign(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }

    /// @dev `key` signs the proof that it controls `newWallet` for `agentId`, owned by
    /// `owner_`, until `deadline`.
    function _walletProof(uint256 key, uint256 agentId, address newWallet, address owner_, uint256 deadline)
        internal
        view
        returns (bytes memory)
    {
        return _sign(key, _walletDigest(agentId, newWallet, owner_, deadline));
    }

    /// @dev {agentOwner} proves {wallet} for `agentId`.
    function _setWallet(uint256 agentId) internal {
        uint256 deadline = block.timestamp + 60;
        bytes memory sig = _walletProof(walletKey, agentId, wallet, agentOwner, deadline);
        vm.prank(agentOwner);
        identity.setAgentWallet(agentId, wallet, deadline, sig);
    }

    function _expectNotAuthorized(uint256 agentId, address caller) internal {
        vm.expectRevert(
            abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryNotAuthorized.selector, agentId, caller)
        );
    }

    /// @dev The ERC-721 error for an agent id nobody registered.
    function _expectNonexistent(uint256 agentId) internal {
        vm.expectRevert(abi.encodeWithSelector(IERC721Errors.ERC721NonexistentToken.selector, agentId));
    }
}
