// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IIdentityRegistry} from "./interfaces/IIdentityRegistry.sol";
import {IReputationRegistry} from "./interfaces/IReputationRegistry.sol";

/// @title ReputationRegistry
/// @notice See {IReputationRegistry}.
///
/// @dev Entries live at `_feedback[agentId][client][index]`, index from 1 up to
/// `_lastIndex[agentId][client]` (non-zero once the client is known, so one slot
/// keeps both). An entry is one slot: its tags are interned, each distinct tag
/// string stored once under a small id (0 for the empty tag). Responses are only
/// counted: per entry in all and per responder, so {getResponseCount} needs no
/// list of responders.
contract ReputationRegistry is IReputationRegistry {
    /// @inheritdoc IReputationRegistry
    int128 public constant override MAX_ABS_VALUE = 1e38;

    uint8 private constant MAX_DECIMALS = 18;

    /// @dev value (128) | decimals (8) | revoked (8) | tag1 id (32) | tag2 id (32): one slot.
    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        uint32 tag1;
        uint32 tag2;
    }

    /// @dev The tag filter that no entry matches: a non-empty tag never interned.
    uint256 private constant NO_MATCH = type(uint256).max;

    /// @dev What {readAllFeedback} returns, gathered in memory.
    struct Page {
        address[] clients;
        uint64[] indexes;
        int128[] values;
        uint8[] decimals;
        string[] tag1s;
        string[] tag2s;
        bool[] revoked;
    }

    /// @dev The registry whose agents are rated.
    IIdentityRegistry private immutable _IDENTITY;

    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => Feedback))) private
        _feedback;
    mapping(uint256 agentId => mapping(address client => uint64 lastIndex)) private _lastIndex;
    mapping(uint256 agentId => address[] clients) private _clients;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => uint64 count))) private
        _responses;
    mapping(
        uint256 agentId
            => mapping(address client => mapping(uint64 index => mapping(address responder => uint64)))
    ) private _responsesBy;
    /// @dev Interned tags: id (from 1) by the tag's keccak256, and the tag by id.
    mapping(bytes32 tagHash => uint32 id) private _tagIds;
    mapping(uint32 id => string tag) private _tags;
    /// @dev Tags interned so far (the last id given).
    uint32 private _tagCount;

    /// @param identityRegistry The identity registry whose agents are rated; non-zero.
    constructor(address identityRegistry) {
        if (identityRegistry == address(0)) revert ReputationRegistryZeroIdentityRegistry();
        _IDENTITY = IIdentityRegistry(identityRegistry);
    }

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IReputationRegistry
    function giveFeedback(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string calldata tag1,
        string calldata tag2,
        string calldata endpoint,
        string calldata feedbackURI,
        bytes32 feedbackHash
    ) external override {
        if (valueDecimals > MAX_DECIMALS) {
            revert ReputationRegistryValueDecimals(valueDecimals);
        }
        if (value > MAX_ABS_VALUE || value < -MAX_ABS_VALUE) revert ReputationRegistryValueRange(value);
        if (_IDENTITY.isAuthorizedOrOwner(msg.sender, agentId)) {
            revert ReputationRegistrySelfFeedback(agentId, msg.sender);
        }
        uint64 index = _store(agentId, value, valueDecimals, tag1, tag2);
        _emitFeedback(agentId, index, value, valueDecimals, tag1, tag2, endpoint, feedbackURI, feedbackHash);
    }

    /// @inheritdoc IReputationRegistry
    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external override {
        Feedback storage f = _entry(agentId, msg.sender, feedbackIndex);
        if (f.isRevoked) revert ReputationRegistryAlreadyRevoked(agentId, feedbackIndex);
        f.isRevoked = true;
        emit FeedbackRevoked(agentId, msg.sender, feedbackIndex);
    }

    /// @inheritdoc IReputationRegistry
    function appendResponse(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        string calldata responseURI,
        bytes32 responseHash
    ) external override {
        _entry(agentId, clientAddress, feedbackIndex);
        if (bytes(responseURI).length == 0) revert ReputationRegistryEmptyResponseURI();
        _responses[agentId][clientAddress][feedbackIndex] += 1;
        _responsesBy[agentId][clientAddress][feedbackIndex][msg.sender] += 1;
        emit ResponseAppended(agentId, clientAddress, feedbackIndex, msg.sender, responseURI, responseHash);
    }

    /*//////////////////////////////////////////////////////////////
                                VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IReputationRegistry
    function getIdentityRegistry() external view override returns (address identityRegistry) {
        return address(_IDENTITY);
    }

    /// @inheritdoc IReputationRegistry
    function getSummary(
        uint256 agentId,
        address[] calldata clientAddresses,
        string calldata tag1,
        string calldata tag2
    ) external view override returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals) {
        if (clientAddresses.length == 0) revert ReputationRegistryClientsRequired();
        int256 sumWad = 0;
        uint64[] memory perDecimals = new uint64[](MAX_DECIMALS + 1);
        for (uint256 i; i < clientAddresses.length; ++i) {
            (int256 sum, uint64 n) =
                _sumClient(agentId, clientAddresses[i], _filter(tag1), _filter(tag2), perDecimals);
            sumWad += sum;
            count += n;
        }
        if (count == 0) return (0, 0, 0);
        for (uint8 d = 1; d <= MAX_DECIMALS; ++d) {
            if (perDecimals[d] > perDecimals[summaryValueDecimals]) summaryValueDecimals = d;
        }
        int256 average = sumWad / int256(uint256(count));
        int256 value = average / int256(10 ** (MAX_DECIMALS - summaryValueDecimals));
        // Entries at fewer decimals can make the average too large for the common
        // decimals: give it at fewer. At zero it fits, as every entry is within
        // MAX_ABS_VALUE at its own decimals, so the loop ends by then.
        while (value > MAX_ABS_VALUE || value < -MAX_ABS_VALUE) {
            value = average / int256(10 ** (MAX_DECIMALS - --summaryValueDecimals));
        }
        summaryValue = int128(value);
    }

    /// @inheritdoc IReputationRegistry
    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        override
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked)
    {
        Feedback memory f = _entry(agentId, clientAddress, feedbackIndex);
        return (f.value, f.valueDecimals, _tags[f.tag1], _tags[f.tag2], f.isRevoked);
    }

    /// @inheritdoc IReputationRegistry
    /// @dev Public with memory arguments: calldata strings and arrays take two stack
    /// slots each, too many next to seven return values.
    function readAllFeedback(
        uint256 agentId,
        address[] memory clientAddresses,
        string memory tag1,
        string memory tag2,
        bool includeRevoked
    )
        public
        view
        override
        returns (
            address[] memory clients,
            uint64[] memory feedbackIndexes,
            int128[] memory values,
            uint8[] memory valueDecimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revokedStatuses
        )
    {
        address[] memory list = clientAddresses.length != 0 ? clientAddresses : _clients[agentId];
        Page memory p = _page(agentId, list, _tagFilter(tag1), _tagFilter(tag2), includeRevoked);
        return (p.clients, p.indexes, p.values, p.decimals, p.tag1s, p.tag2s, p.revoked);
    }

    /// @inheritdoc IReputationRegistry
    function getResponseCount(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        address[] calldata responders
    ) external view override returns (uint64 count) {
        if (clientAddress == address(0)) {
            address[] storage all = _clients[agentId];
            for (uint256 i; i < all.length; ++i) {
                count += _clientResponses(agentId, all[i], responders);
            }
        } else if (feedbackIndex == 0) {
            count = _clientResponses(agentId, clientAddress, responders);
        } else {
            count = _entryResponses(agentId, clientAddress, feedbackIndex, responders);
        }
    }

    /// @inheritdoc IReputationRegistry
    function getClients(uint256 agentId) external view override returns (address[] memory) {
        return _clients[agentId];
    }

    /// @inheritdoc IReputationRegistry
    function getLastIndex(uint256 agentId, address clientAddress) external view override returns (uint64) {
        return _lastIndex[agentId][clientAddress];
    }

    /*//////////////////////////////////////////////////////////////
                            INTERNALS
    //////////////////////////////////////////////////////////////*/

    /// @dev Stores the caller's next entry about `agentId`; returns its index.
    function _store(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string calldata tag1,
        string calldata tag2
    ) private returns (uint64 index) {
        index = _lastIndex[agentId][msg.sender] + 1;
        if (index == 1) _clients[agentId].push(msg.sender);
        _lastIndex[agentId][msg.sender] = index;
        _feedback[agentId][msg.sender][index] = Feedback({
            value: value,
            valueDecimals: valueDecimals,
            isRevoked: false,
            tag1: _intern(tag1),
            tag2: _intern(tag2)
        });
    }

    /// @dev The id of `tag`, interning it on first sight; 0 for the empty tag.
    function _intern(string calldata tag) private returns (uint32 id) {
        if (bytes(tag).length == 0) return 0;
        bytes32 h = keccak256(bytes(tag));
        id = _tagIds[h];
        if (id == 0) {
            id = ++_tagCount;
            _tagIds[h] = id;
            _tags[id] = tag;
        }
    }

    /// @dev Sums one client's unrevoked entries matching the tag filters at 18
    /// decimals, counting them per decimals in `perDecimals`.
    function _sumClient(
        uint256 agentId,
        address client,
        uint256 tag1Filter,
        uint256 tag2Filter,
        uint64[] memory perDecimals
    ) private view returns (int256 sumWad, uint64 count) {
        uint64 last = _lastIndex[agentId][client];
        for (uint64 j = 1; j <= last; ++j) {
            Feedback memory f = _feedback[agentId][client][j];
            if (f.isRevoked || !_matches(f, tag1Filter, tag2Filter)) continue;
            sumWad += int256(f.value) * int256(10 ** (MAX_DECIMALS - f.valueDecimals));
            perDecimals[f.valueDecimals] += 1;
            count += 1;
        }
    }

    /// @dev The entries of `list`'s clients about `agentId` that pass the filters.
    function _page(
        uint256 agentId,
        address[] memory list,
        uint256 tag1Filter,
        uint256 tag2Filter,
        bool includeRevoked
    ) private view returns (Page memory p) {
        uint256 total = 0;
        for (uint256 i; i < list.length; ++i) {
            uint64 last = _lastIndex[agentId][list[i]];
            for (uint64 j = 1; j <= last; ++j) {
                if (_selected(_feedback[agentId][list[i]][j], tag1Filter, tag2Filter, includeRevoked)) {
                    ++total;
                }
            }
        }
        p.clients = new address[](total);
        p.indexes = new uint64[](total);
        p.values = new int128[](total);
        p.decimals = new uint8[](total);
        p.tag1s = new string[](total);
        p.tag2s = new string[](total);
        p.revoked = new bool[](total);
        uint256 n = 0;
        for (uint256 i; i < list.length; ++i) {
            uint64 last = _lastIndex[agentId][list[i]];
            for (uint64 j = 1; j <= last; ++j) {
                Feedback memory f = _feedback[agentId][list[i]][j];
                if (!_selected(f, tag1Filter, tag2Filter, includeRevoked)) continue;
                p.clients[n] = list[i];
                p.indexes[n] = j;
                p.values[n] = f.value;
                p.decimals[n] = f.valueDecimals;
                p.tag1s[n] = _tags[f.tag1];
                p.tag2s[n] = _tags[f.tag2];
                p.revoked[n] = f.isRevoked;
                ++n;
            }
        }
    }

    /// @dev Emits {NewFeedback} from memory copies: the calldata strings would not
    /// fit on the stack next to the caller's parameters.
    function _emitFeedback(
        uint256 agentId,
        uint64 index,
        int128 value,
        uint8 valueDecimals,
        string memory tag1,
        string memory tag2,
        string memory endpoint,
        string memory feedbackURI,
        bytes32 feedbackHash
    ) private {
        emit NewFeedback(
            agentId,
            msg.sender,
            index,
            value,
            valueDecimals,
            tag1,
            tag1,
            tag2,
            endpoint,
            feedbackURI,
            feedbackHash
        );
    }

    function _entry(uint256 agentId, address client, uint64 index) private view returns (Feedback storage) {
        if (index == 0 || index > _lastIndex[agentId][client]) {
            revert ReputationRegistryUnknownFeedback(agentId, client, index);
        }
        return _feedback[agentId][client][index];
    }

    /// @dev The tag id a tag filter compares with: 0 for the empty filter (any
    /// tag), {NO_MATCH} for a tag never given (no entry has it).
    function _filter(string calldata tag) private view returns (uint256) {
        return _tagFilter(tag);
    }

    /// @dev {_filter} for a memory string.
    function _tagFilter(string memory tag) private view returns (uint256) {
        if (bytes(tag).length == 0) return 0;
        uint32 id = _tagIds[keccak256(bytes(tag))];
        return id == 0 ? NO_MATCH : id;
    }

    function _matches(Feedback memory f, uint256 tag1Filter, uint256 tag2Filter) private pure returns (bool) {
        return (tag1Filter == 0 || f.tag1 == tag1Filter) && (tag2Filter == 0 || f.tag2 == tag2Filter);
    }

    function _selected(Feedback memory f, uint256 tag1Filter, uint256 tag2Filter, bool includeRevoked)
        private
        pure
        returns (bool)
    {
        return (includeRevoked || !f.isRevoked) && _matches(f, tag1Filter, tag2Filter);
    }

    function _clientResponses(uint256 agentId, address client, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        uint64 last = _lastIndex[agentId][client];
        for (uint64 j = 1; j <= last; ++j) {
            count += _entryResponses(agentId, client, j, responders);
        }
    }

    function _entryResponses(uint256 agentId, address client, uint64 index, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        if (responders.length == 0) return _responses[agentId][client][index];
        for (uint256 i; i < responders.length; ++i) {
            count += _responsesBy[agentId][client][index][responders[i]];
        }
    }
}
