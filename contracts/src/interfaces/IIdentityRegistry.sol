// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IIdentityRegistry
/// @notice The ERC-8004 ("Trustless Agents") identity registry: every agent is an
/// ERC-721 token whose id is its `agentId` and whose token URI (the `agentURI`)
/// resolves to its registration file. The owner of the token owns the agent; it or
/// an ERC-721 operator manages the URI and the on-chain metadata.
///
/// @dev The ERC-721 functions themselves (`ownerOf`, `transferFrom`, `tokenURI`, ...)
/// come from the implementation. The metadata key `agentWallet` is reserved: it is
/// the address the agent is paid at, set to the owner at registration, changed
/// only through {setAgentWallet} with a signature of the new wallet, and cleared
/// when the token changes hands.
interface IIdentityRegistry {
    /// @notice One on-chain metadata entry given to {register}.
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    /// @notice A new agent was minted.
    /// @dev Follows the ERC-721 `Transfer` from zero and the {MetadataSet} events
    /// (the `agentWallet` one first).
    /// @param agentId The new agent's id (its ERC-721 token id).
    /// @param agentURI Where its registration file is; may be empty.
    /// @param owner Who registered it and owns it.
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);

    /// @notice An agent's on-chain metadata entry was set (or cleared, with an
    /// empty value).
    /// @dev Also emitted for the reserved `agentWallet` key, whose value is the
    /// 20-byte wallet address, or empty when the wallet is cleared.
    /// @param agentId The agent.
    /// @param indexedMetadataKey The key, indexed (topics hold its hash).
    /// @param metadataKey The key.
    /// @param metadataValue The value.
    event MetadataSet(
        uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue
    );

    /// @notice An agent's URI changed.
    /// @dev Emitted by {setAgentURI}; the ERC-4906 `MetadataUpdate` accompanies it.
    /// @param agentId The agent.
    /// @param newURI Where its registration file is now.
    /// @param updatedBy The owner or operator who changed it.
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    /// @notice The caller neither owns the agent nor is approved for it.
    /// @param agentId The agent.
    /// @param caller The caller.
    error IdentityRegistryNotAuthorized(uint256 agentId, address caller);

    /// @notice The `agentWallet` key cannot be set as plain metadata.
    /// @param metadataKey The key given.
    error IdentityRegistryReservedKey(string metadataKey);

    /// @notice The new agent wallet is the zero address.
    error IdentityRegistryZeroWallet();

    /// @notice The wallet proof's deadline has passed.
    /// @param deadline The deadline given.
    /// @param timestamp The block's timestamp.
    error IdentityRegistryExpired(uint256 deadline, uint256 timestamp);

    /// @notice The wallet proof's deadline is further ahead than {MAX_DEADLINE_DELAY}.
    /// @param deadline The deadline given.
    /// @param latest The latest deadline accepted now.
    error IdentityRegistryDeadlineTooFar(uint256 deadline, uint256 latest);

    /// @notice The signature is not the new wallet's (neither its ECDSA signature
    /// nor accepted by its ERC-1271 `isValidSignature`).
    /// @param newWallet The wallet that should have signed.
    error IdentityRegistryInvalidWalletSignature(address newWallet);

    /// @notice Registers a new agent owned by the caller, with a URI and metadata.
    /// @dev Reverts with {IdentityRegistryReservedKey} if an entry's key is
    /// `agentWallet`. Emits `Transfer`, {MetadataSet} for `agentWallet` (the
    /// caller) and for each entry, then {Registered}.
    /// @param agentURI Where the registration file is; may be empty and set later.
    /// @param metadata On-chain metadata entries.
    /// @return agentId The new agent's id; ids count up from 1.
    function register(string calldata agentURI, MetadataEntry[] calldata metadata)
        external
        returns (uint256 agentId);

    /// @notice Registers a new agent owned by the caller, with a URI.
    /// @dev Emits `Transfer`, {MetadataSet} for `agentWallet` (the caller), then
    /// {Registered}.
    /// @param agentURI Where the registration file is; may be empty and set later.
    /// @return agentId The new agent's id.
    function register(string calldata agentURI) external returns (uint256 agentId);

    /// @notice Registers a new agent owned by the caller, its URI to be set later
    /// with {setAgentURI}.
    /// @dev Emits `Transfer`, {MetadataSet} for `agentWallet` (the caller), then
    /// {Registered} with an empty URI.
    /// @return agentId The new agent's id.
    function register() external returns (uint256 agentId);

    /// @notice Changes an agent's URI.
    /// @dev Reverts unless the caller owns the agent or is approved for it. Emits
    /// {URIUpdated}.
    /// @param agentId The agent.
    /// @param newURI Where its registration file is now.
    function setAgentURI(uint256 agentId, string calldata newURI) external;

    /// @notice Sets one on-chain metadata entry of an agent.
    /// @dev Reverts unless the caller owns the agent or is approved for it, or if
    /// the key is `agentWallet`. Emits {MetadataSet}.
    /// @param agentId The agent.
    /// @param metadataKey The key.
    /// @param metadataValue The value; empty clears it.
    function setMetadata(uint256 agentId, string calldata metadataKey, bytes calldata metadataValue) external;

    /// @notice Makes `newWallet` the agent's wallet, proven by the wallet's
    /// signature of {agentWalletDigest}.
    /// @dev Reverts unless the caller owns the agent or is approved for it, if the
    /// wallet is zero, if `deadline` has passed or is more than
    /// {MAX_DEADLINE_DELAY} ahead, or if the signature is neither the wallet's ECDSA
    /// signature nor accepted by its ERC-1271 `isValidSignature`. The signed
    /// EIP-712 struct is `AgentWalletSet(uint256 agentId,address newWallet,address
    /// owner,uint256 nonce,uint256 deadline)` under the domain
    /// `ERC8004IdentityRegistry`, version `1`, where `nonce` is the wallet's
    /// {walletNonce}; a proof that lands uses its nonce up, so it cannot be sent
    /// again (after an unset, a transfer there and back, or for another agent).
    /// Emits {MetadataSet} for `agentWallet`.
    /// @param agentId The agent.
    /// @param newWallet The wallet.
    /// @param deadline Last timestamp the proof is good for.
    /// @param signature The wallet's signature.
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature)
        external;

    /// @notice Clears the agent's wallet.
    /// @dev Reverts unless the caller owns the agent or is approved for it. Emits
    /// {MetadataSet} for `agentWallet` with an empty value.
    /// @param agentId The agent.
    function unsetAgentWallet(uint256 agentId) external;

    /// @notice One on-chain metadata entry of an agent.
    /// @dev For `agentWallet`, the 20-byte wallet, or empty when it is cleared.
    /// @param agentId The agent.
    /// @param metadataKey The key.
    /// @return The value; empty if never set.
    function getMetadata(uint256 agentId, string calldata metadataKey) external view returns (bytes memory);

    /// @notice The agent's proven wallet.
    /// @dev Reverts with ERC-721's `ERC721NonexistentToken` for an unknown agent.
    /// @param agentId The agent.
    /// @return The wallet; zero when cleared.
    function getAgentWallet(uint256 agentId) external view returns (address);

    /// @notice Whether `spender` owns the agent or is approved for it (the test
    /// behind every write of this registry and the self-feedback rule).
    /// @dev Reverts with ERC-721's `ERC721NonexistentToken` for an unknown agent.
    /// @param spender The address asked about.
    /// @param agentId The agent.
    /// @return True if `spender` is the owner, an operator of the owner, or approved
    /// for the token.
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);

    /// @notice The EIP-712 digest the new wallet signs for {setAgentWallet}, with
    /// the wallet's current {walletNonce}.
    /// @dev Lets an ERC-1271 wallet (or a test) compute what it approves.
    /// @param agentId The agent.
    /// @param newWallet The wallet.
    /// @param owner The agent's owner when the wallet is set.
    /// @param deadline Last timestamp the proof is good for.
    /// @return The digest.
    function agentWalletDigest(uint256 agentId, address newWallet, address owner, uint256 deadline)
        external
        view
        returns (bytes32);

    /// @notice The nonce `wallet`'s next wallet proof signs.
    /// @dev Starts at zero and grows by one with every {setAgentWallet} call that
    /// names the wallet and lands.
    /// @param wallet The wallet.
    /// @return The nonce.
    function walletNonce(address wallet) external view returns (uint256);

    /// @notice Longest a wallet proof may be valid for, from the block it lands in.
    /// @dev Bounds the window in which a proof can be replayed.
    /// @return The delay in seconds (5 minutes).
    function MAX_DEADLINE_DELAY() external view returns (uint256);

    /// @notice How many agents were ever registered (the last agent id).
    /// @dev Agent ids are 1 to this count; tokens are never burned.
    /// @return The count.
    function agentCount() external view returns (uint256);
}
