// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Offers} from "./../utils/Offers.sol";
import {IAgentRegistry} from "../../src/interfaces/IAgentRegistry.sol";
import {Base} from "../Base.t.sol";

/// @notice Shared fixture for the registry tests: named capabilities and
/// prices, list builders, and checks that both indexes agree with each other.
abstract contract RegistryBase is Base {
    bytes32 internal constant CAP_A = "summarize";
    bytes32 internal constant CAP_B = "translate";
    bytes32 internal constant CAP_C = "classify";
    bytes32 internal constant CAP_D = "embed";

    uint128 internal constant PRICE_A = 1_000_000;
    uint128 internal constant PRICE_B = 2_500_000;
    uint128 internal constant PRICE_C = 400_000;

    string internal constant URI = "ipfs://agent-card";
    string internal constant URI_2 = "ipfs://agent-card-v2";

    /// @dev The agents the tests register (the fixture's executors).
    address internal agent;
    address internal agent2;

    /// @dev The registry's tests start from an empty registry.
    function _registerExecutors() internal override {}

    function setUp() public virtual override {
        Base.setUp();
        agent = executor;
        agent2 = executor2;
    }

    /*//////////////////////////////////////////////////////////////
                            LIST BUILDERS
    //////////////////////////////////////////////////////////////*/

    function _caps(bytes32 a) internal pure returns (bytes32[] memory l) {
        l = new bytes32[](1);
        l[0] = a;
    }

    function _caps(bytes32 a, bytes32 b) internal pure returns (bytes32[] memory l) {
        l = new bytes32[](2);
        (l[0], l[1]) = (a, b);
    }

    function _caps(bytes32 a, bytes32 b, bytes32 c) internal pure returns (bytes32[] memory l) {
        l = new bytes32[](3);
        (l[0], l[1], l[2]) = (a, b, c);
    }

    function _prices(uint128 a) internal pure returns (uint128[] memory l) {
        l = new uint128[](1);
        l[0] = a;
    }

    function _prices(uint128 a, uint128 b) internal pure returns (uint128[] memory l) {
        l = new uint128[](2);
        (l[0], l[1]) = (a, b);
    }

    function _prices(uint128 a, uint128 b, uint128 c) internal pure returns (uint128[] memory l) {
        l = new uint128[](3);
        (l[0], l[1], l[2]) = (a, b, c);
    }

    /// @dev `n` distinct non-zero capabilities and `n` non-zero prices.
    function _manyOffers(uint256 n) internal pure returns (bytes32[] memory caps, uint128[] memory prices) {
        caps = new bytes32[](n);
        prices = new uint128[](n);
        for (uint256 i; i < n; ++i) {
            caps[i] = bytes32(i + 1);
            prices[i] = uint128(i + 1);
        }
    }

    /*//////////////////////////////////////////////////////////////
                            REGISTRATION
    //////////////////////////////////////////////////////////////*/

    function _register(address who, bytes32[] memory caps, uint128[] memory prices) internal {
        vm.prank(who);
        registry.register(URI, caps, prices);
    }

    /// @dev `who` offers CAP_A at PRICE_A and CAP_B at PRICE_B.
    function _registerDefault(address who) internal {
        _register(who, _caps(CAP_A, CAP_B), _prices(PRICE_A, PRICE_B));
    }

    /*//////////////////////////////////////////////////////////////
                                CHECKS
    //////////////////////////////////////////////////////////////*/

    function _count(address[] memory list, address who) internal pure returns (uint256 n) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) ++n;
        }
    }

    function _count(bytes32[] memory list, bytes32 c) internal pure returns (uint256 n) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == c) ++n;
        }
    }

    /// @dev Both indexes agree for `who`: every listed capability is priced, the
    /// price matches the record, and `who` appears exactly once in its agent list.
    function _assertConsistent(address who) internal view {
        IAgentRegistry.AgentView memory v = registry.getAgent(who);
        assertEq(v.capabilities.length, v.prices.length, "lists length");
        for (uint256 i; i < v.capabilities.length; ++i) {
            bytes32 c = v.capabilities[i];
            assertEq(_count(v.capabilities, c), 1, "capability listed once");
            (bool offered, uint128 price) = registry.priceOf(who, c);
            assertTrue(offered, "listed capability offered");
            assertEq(price, v.prices[i], "price matches record");
            assertEq(_count(Offers.agentsFor(registry, c), who), 1, "agent listed once for capability");
        }
    }

    /// @dev `who` does not offer `c` and is not in its agent list.
    function _assertNotOffered(address who, bytes32 c) internal view {
        (bool offered, uint128 price) = registry.priceOf(who, c);
        assertFalse(offered, "not offered");
        assertEq(price, 0, "no price");
        assertEq(_count(Offers.agentsFor(registry, c), who), 0, "not in agent list");
        assertEq(_count(registry.getAgent(who).capabilities, c), 0, "not in capability list");
    }

    function _assertOffered(address who, bytes32 c, uint128 expected) internal view {
        (bool offered, uint128 price) = registry.priceOf(who, c);
        assertTrue(offered, "offered");
        assertEq(price, expected, "price");
        assertEq(_count(Offers.agentsFor(registry, c), who), 1, "in agent list once");
        assertEq(_count(registry.getAgent(who).capabilities, c), 1, "in capability list once");
    }

    function _assertStatus(address who, IAgentRegistry.AgentStatus s) internal view {
        assertEq(uint256(registry.getAgent(who).status), uint256(s), "agent status");
        assertEq(registry.isActive(who), s == IAgentRegistry.AgentStatus.Active, "isActive");
    }

    /// @dev The whole record of `who`, hashed, to show a call left it untouched.
    function _snapshot(address who) internal view returns (bytes32) {
        return keccak256(abi.encode(registry.getAgent(who)));
    }
}
