// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "../../utils/Vm.sol";

/// @notice What every handler shares: cheatcodes, `bound`, and picking from a
/// fixed list of actors. Handlers only ever make calls that must succeed, or
/// calls that must fail made through try/catch or a low-level call whose
/// outcome is recorded, so `fail_on_revert = true` holds.
abstract contract BaseHandler {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    /// @dev Maps `x` into [lo, hi], keeping in-range inputs as they are (same as Test.bound).
    function bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        if (x >= lo && x <= hi) return x;
        uint256 size = hi - lo + 1;
        if (size == 0) return x;
        return lo + (x % size);
    }

    function _actor(address[] storage list, uint256 seed) internal view returns (address) {
        return list[seed % list.length];
    }

    function _named(string memory name) internal returns (address a) {
        a = vm.addr(uint256(keccak256(bytes(name))));
        vm.label(a, name);
    }
}
