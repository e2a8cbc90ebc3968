// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice A hostile ERC20: once armed, its next `transfer` or `transferFrom`
/// calls `target` with `payload` after moving the tokens (a re-entry in the
/// middle of the escrow's payout or pull). It either bubbles the re-entry's
/// revert or swallows it and records the outcome. One shot per arming.
contract ReentrantToken is ERC20 {
    enum Hook {
        None,
        Transfer,
        TransferFrom
    }

    Hook public hook;
    address public target;
    bytes public payload;
    bool public bubble;

    uint256 public reentries;
    bool public lastSuccess;
    bytes public lastReturn;

    constructor() ERC20("Hostile", "HOST") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice Re-enter `target_` with `payload_` on the next `hook_`.
    function arm(Hook hook_, address target_, bytes calldata payload_, bool bubble_) external {
        hook = hook_;
        target = target_;
        payload = payload_;
        bubble = bubble_;
    }

    /// @notice Lets the token approve a spender for its own balance (to fund a nested create).
    function approveFromSelf(address spender, uint256 amount) external {
        _approve(address(this), spender, amount);
    }

    function transfer(address to, uint256 value) public override returns (bool ok) {
        ok = super.transfer(to, value);
        _reenter(Hook.Transfer);
    }

    function transferFrom(address from, address to, uint256 value) public override returns (bool ok) {
        ok = super.transferFrom(from, to, value);
        _reenter(Hook.TransferFrom);
    }

    function _reenter(Hook at) private {
        if (hook != at) return;
        hook = Hook.None;
        ++reentries;
        (bool success, bytes memory ret) = target.call(payload);
        lastSuccess = success;
        lastReturn = ret;
        if (!success && bubble) {
            assembly ("memory-safe") {
                revert(add(ret, 0x20), mload(ret))
            }
        }
    }
}
