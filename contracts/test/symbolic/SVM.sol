// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice The symbolic-value cheatcodes halmos answers (its `svm` address);
/// only what the symbolic checks here use.
interface SVM {
    function createUint256(string calldata name) external pure returns (uint256);
    function createAddress(string calldata name) external pure returns (address);
}

SVM constant svm = SVM(address(uint160(uint256(keccak256("svm cheat code")))));
