// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReputationRegistry} from "../../src/ReputationRegistry.sol";
import {IdentityBase} from "../IdentityRegistry/IdentityBase.t.sol";

/// @notice Shared fixture for the reputation registry's tests: a reputation
/// registry bound to the fixture's identity registry, one agent owned by
/// `agentOwner`, and two clients.
abstract contract ReputationBase is IdentityBase {
    ReputationRegistry internal reputation;
    uint256 internal agentId;
    address internal client2;

    string internal constant TAG = "settled";
    string internal constant TAG_2 = "summarize";
    string internal constant ENDPOINT = "https://agent.example/a2a";
    string internal constant FEEDBACK_URI = "ipfs://feedback-1";
    bytes32 internal constant FEEDBACK_HASH = keccak256("feedback-1");

    function setUp() public virtual override {
        IdentityBase.setUp();
        reputation = new ReputationRegistry(address(identity));
        agentId = _mintAgent(agentOwner);
        client2 = makeAddr("client2");
    }

    /// @dev `who` rates the agent `value` with `decimals`, tags `tag1` and `tag2`.
    function _give(address who, int128 value, uint8 decimals, string memory tag1, string memory tag2)
        internal
    {
        vm.prank(who);
        reputation.giveFeedback(agentId, value, decimals, tag1, tag2, ENDPOINT, FEEDBACK_URI, FEEDBACK_HASH);
    }

    function _clients(address a) internal pure returns (address[] memory l) {
        l = new address[](1);
        l[0] = a;
    }

    function _clients(address a, address b) internal pure returns (address[] memory l) {
        l = new address[](2);
        (l[0], l[1]) = (a, b);
    }
}
