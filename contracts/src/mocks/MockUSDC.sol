// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title MockUSDC
/// @notice A 6-decimal, EIP-2612 permit-capable stand-in for USDC on local
/// chains. Its EIP-712 domain is ("USD Coin", version "1").
/// Only the owner mints.
contract MockUSDC is ERC20, ERC20Permit, Ownable {
    constructor(address owner_) ERC20("USD Coin", "USDC") ERC20Permit("USD Coin") Ownable(owner_) {}

    /// @notice Owner: create `amount` tokens for `to`.
    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }

    /// @inheritdoc ERC20
    function decimals() public pure override returns (uint8) {
        return 6;
    }
}
