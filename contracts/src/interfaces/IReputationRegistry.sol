// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IReputationRegistry
/// @notice The ERC-8004 ("Trustless Agents") reputation registry: clients post
/// feedback (a signed fixed-point value with optional tags) about agents of one
/// identity registry, may revoke it, and anyone may append responses to it.
///
/// @dev Feedback is numbered per (agent, client) from 1. The value, its decimals,
/// the tags and the revoked flag are stored; the endpoint, the feedback URI and
/// its hash are only emitted. Summaries read a caller-chosen list of clients:
/// reading every client would count whoever posts the most.
interface IReputationRegistry {
    /// @notice A client posted feedback about an agent.
    /// @dev `feedbackIndex` is the client's count of feedback to this agent.
    /// @param agentId The agent.
    /// @param clientAddress The client, who called.
    /// @param feedbackIndex Its number among this client's feedback to this agent.
    /// @param value The value, a fixed-point number.
    /// @param valueDecimals The value's decimals (0 to 18).
    /// @param indexedTag1 The first tag, indexed (topics hold its hash).
    /// @param tag1 The first tag; may be empty.
    /// @param tag2 The second tag; may be empty.
    /// @param endpoint The agent endpoint the feedback is about; may be empty.
    /// @param feedbackURI Where the feedback file is; may be empty.
    /// @param feedbackHash The keccak-256 of that file; may be zero.
    event NewFeedback(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        int128 value,
        uint8 valueDecimals,
        string indexed indexedTag1,
        string tag1,
        string tag2,
        string endpoint,
        string feedbackURI,
        bytes32 feedbackHash
    );

    /// @notice A client revoked one of its feedback entries.
    /// @dev The entry stays readable, marked revoked; summaries skip it.
    /// @param agentId The agent.
    /// @param clientAddress The client.
    /// @param feedbackIndex The entry.
    event FeedbackRevoked(
        uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex
    );

    /// @notice Someone responded to a feedback entry.
    /// @dev Only counted on chain; the response itself is off chain.
    /// @param agentId The agent.
    /// @param clientAddress The client whose entry it is.
    /// @param feedbackIndex The entry.
    /// @param responder Who responded.
    /// @param responseURI Where the response is.
    /// @param responseHash The keccak-256 of the response; may be zero.
    event ResponseAppended(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        address indexed responder,
        string responseURI,
        bytes32 responseHash
    );

    /// @notice The identity registry address is zero.
    error ReputationRegistryZeroIdentityRegistry();

    /// @notice The caller owns the agent or is approved for it: an agent does not
    /// rate itself.
    /// @param agentId The agent.
    /// @param caller The caller.
    error ReputationRegistrySelfFeedback(uint256 agentId, address caller);

    /// @notice The value's decimals are above 18.
    /// @param valueDecimals The decimals given.
    error ReputationRegistryValueDecimals(uint8 valueDecimals);

    /// @notice The value's magnitude is above {MAX_ABS_VALUE}.
    /// @param value The value given.
    error ReputationRegistryValueRange(int128 value);

    /// @notice No such feedback entry.
    /// @param agentId The agent.
    /// @param clientAddress The client.
    /// @param feedbackIndex The index given (entries are numbered from 1).
    error ReputationRegistryUnknownFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex);

    /// @notice The entry is already revoked.
    /// @param agentId The agent.
    /// @param feedbackIndex The entry.
    error ReputationRegistryAlreadyRevoked(uint256 agentId, uint64 feedbackIndex);

    /// @notice The response URI is empty.
    error ReputationRegistryEmptyResponseURI();

    /// @notice A summary needs a non-empty list of clients.
    error ReputationRegistryClientsRequired();

    /// @notice Posts feedback about an agent as the caller.
    /// @dev Reverts with the identity registry's `ERC721NonexistentToken` for an
    /// unknown agent, with {ReputationRegistrySelfFeedback} if the caller owns the
    /// agent or is approved for it, if `valueDecimals` is above 18 or `value` above
    /// {MAX_ABS_VALUE} in magnitude. Emits {NewFeedback}.
    /// @param agentId The agent.
    /// @param value The value, a fixed-point number.
    /// @param valueDecimals The value's decimals (0 to 18).
    /// @param tag1 The first tag; may be empty.
    /// @param tag2 The second tag; may be empty.
    /// @param endpoint The agent endpoint the feedback is about; may be empty.
    /// @param feedbackURI Where the feedback file is; may be empty.
    /// @param feedbackHash The keccak-256 of that file; may be zero.
    function giveFeedback(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string calldata tag1,
        string calldata tag2,
        string calldata endpoint,
        string calldata feedbackURI,
        bytes32 feedbackHash
    ) external;

    /// @notice Revokes one of the caller's feedback entries about an agent.
    /// @dev Reverts if the entry does not exist or is already revoked. Emits
    /// {FeedbackRevoked}.
    /// @param agentId The agent.
    /// @param feedbackIndex The entry.
    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external;

    /// @notice Appends a response to a feedback entry (anyone may: the agent
    /// showing a refund, a spam tagger, ...).
    /// @dev Reverts if the entry does not exist or the URI is empty. Emits
    /// {ResponseAppended}.
    /// @param agentId The agent.
    /// @param clientAddress The client whose entry it is.
    /// @param feedbackIndex The entry.
    /// @param responseURI Where the response is; non-empty.
    /// @param responseHash The keccak-256 of the response; may be zero.
    function appendResponse(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        string calldata responseURI,
        bytes32 responseHash
    ) external;

    /// @notice The identity registry whose agents this registry rates.
    /// @dev Fixed at construction.
    /// @return identityRegistry Its address.
    function getIdentityRegistry() external view returns (address identityRegistry);

    /// @notice Count and average of the unrevoked feedback of the given clients,
    /// optionally filtered by tags.
    /// @dev Reverts with {ReputationRegistryClientsRequired} if `clientAddresses` is
    /// empty. Values are averaged at 18 decimals, then given at the decimals most
    /// entries use (the fewest decimals on a tie), truncated toward zero; if the
    /// average exceeds {MAX_ABS_VALUE} at those decimals (entries at fewer decimals
    /// can make it), at the most decimals below them where it does not. Never
    /// reverts on the values (each within {MAX_ABS_VALUE}, the average is too at
    /// zero decimals). Loops over every entry of every client given: keep the list
    /// short.
    /// @param agentId The agent.
    /// @param clientAddresses The clients to count; non-empty.
    /// @param tag1 Only entries with this first tag; empty for any.
    /// @param tag2 Only entries with this second tag; empty for any.
    /// @return count How many entries were counted.
    /// @return summaryValue Their average; zero if none.
    /// @return summaryValueDecimals The average's decimals; zero if none.
    function getSummary(
        uint256 agentId,
        address[] calldata clientAddresses,
        string calldata tag1,
        string calldata tag2
    ) external view returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals);

    /// @notice One feedback entry.
    /// @dev Reverts with {ReputationRegistryUnknownFeedback} if it does not exist.
    /// @param agentId The agent.
    /// @param clientAddress The client.
    /// @param feedbackIndex The entry (from 1).
    /// @return value The value.
    /// @return valueDecimals Its decimals.
    /// @return tag1 The first tag.
    /// @return tag2 The second tag.
    /// @return isRevoked Whether the client revoked it.
    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked);

    /// @notice Every feedback entry about an agent matching the filters, client by
    /// client in order.
    /// @dev Loops over every entry of the clients read: meant for off-chain calls.
    /// @param agentId The agent.
    /// @param clientAddresses The clients to read; empty for every client.
    /// @param tag1 Only entries with this first tag; empty for any.
    /// @param tag2 Only entries with this second tag; empty for any.
    /// @param includeRevoked Whether revoked entries are included.
    /// @return clients Each entry's client.
    /// @return feedbackIndexes Each entry's index.
    /// @return values Each entry's value.
    /// @return valueDecimals Each entry's decimals.
    /// @return tag1s Each entry's first tag.
    /// @return tag2s Each entry's second tag.
    /// @return revokedStatuses Whether each entry is revoked.
    function readAllFeedback(
        uint256 agentId,
        address[] calldata clientAddresses,
        string calldata tag1,
        string calldata tag2,
        bool includeRevoked
    )
        external
        view
        returns (
            address[] memory clients,
            uint64[] memory feedbackIndexes,
            int128[] memory values,
            uint8[] memory valueDecimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revokedStatuses
        );

    /// @notice How many responses were appended, narrowed by entry and responders.
    /// @dev With a zero `clientAddress`, counts over every client's entries; with a
    /// zero `feedbackIndex`, over every entry of that client; an unknown entry
    /// counts zero.
    /// @param agentId The agent.
    /// @param clientAddress The client; zero for every client.
    /// @param feedbackIndex The entry; zero for every entry of the client.
    /// @param responders Only responses by these; empty for anyone's.
    /// @return count The number of responses.
    function getResponseCount(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        address[] calldata responders
    ) external view returns (uint64 count);

    /// @notice Every client that ever posted feedback about an agent.
    /// @dev In order of first feedback; a client whose entries are all revoked stays.
    /// @param agentId The agent.
    /// @return The clients.
    function getClients(uint256 agentId) external view returns (address[] memory);

    /// @notice The index of a client's latest feedback about an agent.
    /// @dev Entries are 1 to this index.
    /// @param agentId The agent.
    /// @param clientAddress The client.
    /// @return The index; zero if none.
    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64);

    /// @notice Largest magnitude of a feedback value.
    /// @dev Keeps the 18-decimal sums of {getSummary} far from overflow.
    /// @return The bound (1e38).
    function MAX_ABS_VALUE() external view returns (int128);
}
