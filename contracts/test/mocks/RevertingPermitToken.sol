// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice An ERC20 whose EIP-2612 `permit` always reverts (a token with permit
/// disabled, or one that rejects every signature).
contract RevertingPermitToken is ERC20 {
    error PermitDisabled();

    constructor() ERC20("No Permit", "NOPE") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function permit(address, address, uint256, uint256, uint8, bytes32, bytes32) external pure {
        revert PermitDisabled();
    }
}
