// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC721URIStorage} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721URIStorage.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

import {IIdentityRegistry} from "./interfaces/IIdentityRegistry.sol";

/// @title IdentityRegistry
/// @notice See {IIdentityRegistry}.
///
/// @dev Agents are minted with `_mint` (no receiver callback) and never burned.
/// The agent wallet lives in its own mapping; {getMetadata} answers the reserved
/// key from it, so plain metadata can never shadow it.
contract IdentityRegistry is ERC721URIStorage, EIP712, IIdentityRegistry {
    /// @inheritdoc IIdentityRegistry
    uint256 public constant override MAX_DEADLINE_DELAY = 5 minutes;

    /// @dev The EIP-712 struct the new wallet signs.
    bytes32 private constant AGENT_WALLET_SET_TYPEHASH = keccak256(
        "AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 nonce,uint256 deadline)"
    );
    /// @dev The reserved metadata key.
    string private constant AGENT_WALLET_KEY = "agentWallet";
    bytes32 private constant AGENT_WALLET_KEY_HASH = keccak256(bytes(AGENT_WALLET_KEY));

    uint256 private _lastId;
    mapping(uint256 agentId => address wallet) private _wallets;
    mapping(uint256 agentId => mapping(string key => bytes value)) private _metadata;
    /// @dev Per wallet, how many of its proofs were used: the nonce its next proof signs.
    mapping(address wallet => uint256 nonce) private _walletNonces;

    constructor() ERC721("ERC-8004 Agent Identity", "AGENT") EIP712("ERC8004IdentityRegistry", "1") {}

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IIdentityRegistry
    function register(string calldata agentURI, MetadataEntry[] calldata metadata)
        external
        override
        returns (uint256 agentId)
    {
        agentId = _mintAgent(agentURI);
        for (uint256 i; i < metadata.length; ++i) {
            _setMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
        emit Registered(agentId, agentURI, msg.sender);
    }

    /// @inheritdoc IIdentityRegistry
    function register(string calldata agentURI) external override returns (uint256 agentId) {
        agentId = _mintAgent(agentURI);
        emit Registered(agentId, agentURI, msg.sender);
    }

    /// @inheritdoc IIdentityRegistry
    function register() external override returns (uint256 agentId) {
        agentId = _mintAgent("");
        emit Registered(agentId, "", msg.sender);
    }

    /// @inheritdoc IIdentityRegistry
    function setAgentURI(uint256 agentId, string calldata newURI) external override {
        _authorized(agentId);
        _setTokenURI(agentId, newURI);
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    /// @inheritdoc IIdentityRegistry
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue)
        external
        override
    {
        _authorized(agentId);
        _setMetadata(agentId, metadataKey, metadataValue);
    }

    /// @inheritdoc IIdentityRegistry
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature)
        external
        override
    {
        address owner = _authorized(agentId);
        if (newWallet == address(0)) revert IdentityRegistryZeroWallet();
        if (block.timestamp > deadline) revert IdentityRegistryExpired(deadline, block.timestamp);
        if (deadline > block.timestamp + MAX_DEADLINE_DELAY) {
            revert IdentityRegistryDeadlineTooFar(deadline, block.timestamp + MAX_DEADLINE_DELAY);
        }
        // The proof signs the wallet's current nonce and uses it up: it cannot be sent twice.
        uint256 nonce = _walletNonces[newWallet]++;
        bytes32 digest = _walletDigest(agentId, newWallet, owner, nonce, deadline);
        if (!SignatureChecker.isValidSignatureNow(newWallet, digest, signature)) {
            revert IdentityRegistryInvalidWalletSignature(newWallet);
        }
        _setWallet(agentId, newWallet);
    }

    /// @inheritdoc IIdentityRegistry
    function unsetAgentWallet(uint256 agentId) external override {
        _authorized(agentId);
        _setWallet(agentId, address(0));
    }

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IIdentityRegistry
    function getMetadata(uint256 agentId, string calldata metadataKey)
        external
        view
        override
        returns (bytes memory)
    {
        if (keccak256(bytes(metadataKey)) == AGENT_WALLET_KEY_HASH) {
            return _walletBytes(_wallets[agentId]);
        }
        return _metadata[agentId][metadataKey];
    }

    /// @inheritdoc IIdentityRegistry
    function getAgentWallet(uint256 agentId) external view override returns (address) {
        _requireOwned(agentId);
        return _wallets[agentId];
    }

    /// @inheritdoc IIdentityRegistry
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view override returns (bool) {
        return _isAuthorized(_requireOwned(agentId), spender, agentId);
    }

    /// @inheritdoc IIdentityRegistry
    function agentWalletDigest(uint256 agentId, address newWallet, address owner, uint256 deadline)
        external
        view
        override
        returns (bytes32)
    {
        return _walletDigest(agentId, newWallet, owner, _walletNonces[newWallet], deadline);
    }

    /// @inheritdoc IIdentityRegistry
    function walletNonce(address wallet) external view override returns (uint256) {
        return _walletNonces[wallet];
    }

    /// @inheritdoc IIdentityRegistry
    function agentCount() external view override returns (uint256) {
        return _lastId;
    }

    /*//////////////////////////////////////////////////////////////
                            INTERNALS
    //////////////////////////////////////////////////////////////*/

    /// @dev Mints the next agent to the caller, with its URI and the caller as wallet.
    function _mintAgent(string memory agentURI) private returns (uint256 agentId) {
        agentId = ++_lastId;
        _mint(msg.sender, agentId);
        if (bytes(agentURI).length != 0) _setTokenURI(agentId, agentURI);
        _setWallet(agentId, msg.sender);
    }

    /// @dev The owner of `agentId`, once the caller is known to own it or be approved for it.
    function _authorized(uint256 agentId) private view returns (address owner) {
        owner = _requireOwned(agentId);
        if (!_isAuthorized(owner, msg.sender, agentId)) {
            revert IdentityRegistryNotAuthorized(agentId, msg.sender);
        }
    }

    function _setMetadata(uint256 agentId, string calldata key, bytes calldata value) private {
        if (keccak256(bytes(key)) == AGENT_WALLET_KEY_HASH) revert IdentityRegistryReservedKey(key);
        _metadata[agentId][key] = value;
        emit MetadataSet(agentId, key, key, value);
    }

    function _setWallet(uint256 agentId, address wallet) private {
        _wallets[agentId] = wallet;
        emit MetadataSet(agentId, AGENT_WALLET_KEY, AGENT_WALLET_KEY, _walletBytes(wallet));
    }

    function _walletBytes(address wallet) private pure returns (bytes memory) {
        return wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
    }

    function _walletDigest(uint256 agentId, address newWallet, address owner, uint256 nonce, uint256 deadline)
        private
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(
            keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, nonce, deadline))
        );
    }

    /// @dev A transfer (not a mint) clears the wallet: the new owner proves its own.
    function _update(address to, uint256 tokenId, address auth) internal override returns (address from) {
        from = super._update(to, tokenId, auth);
        if (from != address(0) && from != to && _wallets[tokenId] != address(0)) {
            _setWallet(tokenId, address(0));
        }
    }
}
