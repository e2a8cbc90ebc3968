// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "./Vm.sol";

/// @notice A small test base: cheatcodes, assertions that revert with a
/// message, `bound`, and the target-selection hooks forge's invariant runner
/// reads (same names and return types forge looks for).
abstract contract Test {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    /// @dev Forge marks contracts with this as test contracts.
    bool public IS_TEST = true;

    struct FuzzSelector {
        address addr;
        bytes4[] selectors;
    }

    address[] private _targetContracts;
    address[] private _targetSenders;
    address[] private _excludeSenders;
    FuzzSelector[] private _targetSelectors;

    /*//////////////////////////////////////////////////////////////
                            INVARIANT TARGETING
    //////////////////////////////////////////////////////////////*/

    function targetContract(address target) internal {
        _targetContracts.push(target);
    }

    function targetSelector(FuzzSelector memory selector) internal {
        _targetSelectors.push(selector);
    }

    function targetSender(address sender) internal {
        _targetSenders.push(sender);
    }

    function excludeSender(address sender) internal {
        _excludeSenders.push(sender);
    }

    function targetContracts() public view returns (address[] memory) {
        return _targetContracts;
    }

    function targetSelectors() public view returns (FuzzSelector[] memory) {
        return _targetSelectors;
    }

    function targetSenders() public view returns (address[] memory) {
        return _targetSenders;
    }

    function excludeSenders() public view returns (address[] memory) {
        return _excludeSenders;
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    function makeAddr(string memory name) internal returns (address a) {
        a = vm.addr(uint256(keccak256(bytes(name))));
        vm.label(a, name);
    }

    function makeKey(string memory name) internal returns (address a, uint256 key) {
        key = uint256(keccak256(bytes(name)));
        a = vm.addr(key);
        vm.label(a, name);
    }

    /// @dev Maps `x` into [lo, hi] keeping small inputs stable (like forge-std's bound).
    function bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        require(lo <= hi, "bound: lo > hi");
        if (x >= lo && x <= hi) return x;
        uint256 size = hi - lo + 1;
        if (size == 0) return x; // full range
        return lo + (x % size);
    }

    /*//////////////////////////////////////////////////////////////
                                ASSERTIONS
    //////////////////////////////////////////////////////////////*/

    function fail(string memory message) internal pure {
        revert(message);
    }

    function assertTrue(bool c, string memory message) internal pure {
        if (!c) revert(message);
    }

    function assertTrue(bool c) internal pure {
        assertTrue(c, "assertion failed");
    }

    function assertFalse(bool c, string memory message) internal pure {
        if (c) revert(message);
    }

    function assertFalse(bool c) internal pure {
        assertFalse(c, "assertion failed: expected false");
    }

    function assertEq(uint256 a, uint256 b, string memory message) internal pure {
        if (a != b) revert(string.concat(message, ": ", _u(a), " != ", _u(b)));
    }

    function assertEq(uint256 a, uint256 b) internal pure {
        assertEq(a, b, "assertEq(uint)");
    }

    function assertEq(address a, address b, string memory message) internal pure {
        if (a != b) revert(string.concat(message, ": address mismatch"));
    }

    function assertEq(address a, address b) internal pure {
        assertEq(a, b, "assertEq(address)");
    }

    function assertEq(bytes32 a, bytes32 b, string memory message) internal pure {
        if (a != b) revert(string.concat(message, ": bytes32 mismatch"));
    }

    function assertEq(bytes32 a, bytes32 b) internal pure {
        assertEq(a, b, "assertEq(bytes32)");
    }

    function assertEq(bool a, bool b, string memory message) internal pure {
        if (a != b) revert(string.concat(message, ": bool mismatch"));
    }

    function assertEq(bool a, bool b) internal pure {
        assertEq(a, b, "assertEq(bool)");
    }

    function assertEq(string memory a, string memory b, string memory message) internal pure {
        if (keccak256(bytes(a)) != keccak256(bytes(b))) {
            revert(string.concat(message, ": \"", a, "\" != \"", b, "\""));
        }
    }

    function assertEq(string memory a, string memory b) internal pure {
        assertEq(a, b, "assertEq(string)");
    }

    function assertEq(int256 a, int256 b, string memory message) internal pure {
        if (a != b) revert(string.concat(message, ": ", _i(a), " != ", _i(b)));
    }

    function assertEq(bytes memory a, bytes memory b, string memory message) internal pure {
        if (keccak256(a) != keccak256(b)) revert(string.concat(message, ": bytes mismatch"));
    }

    function assertNotEq(uint256 a, uint256 b, string memory message) internal pure {
        if (a == b) revert(string.concat(message, ": both ", _u(a)));
    }

    function assertNotEq(bytes32 a, bytes32 b, string memory message) internal pure {
        if (a == b) fail(message);
    }

    function assertLe(uint256 a, uint256 b, string memory message) internal pure {
        if (a > b) revert(string.concat(message, ": ", _u(a), " > ", _u(b)));
    }

    function assertGe(uint256 a, uint256 b, string memory message) internal pure {
        if (a < b) revert(string.concat(message, ": ", _u(a), " < ", _u(b)));
    }

    function _i(int256 v) private pure returns (string memory) {
        return v < 0 ? string.concat("-", _u(uint256(-v))) : _u(uint256(v));
    }

    function _u(uint256 v) private pure returns (string memory) {
        if (v == 0) return "0";
        uint256 len;
        for (uint256 t = v; t != 0; t /= 10) {
            ++len;
        }
        bytes memory out = new bytes(len);
        for (; v != 0; v /= 10) {
            out[--len] = bytes1(uint8(48 + (v % 10)));
        }
        return string(out);
    }
}
