// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice The subset of forge's cheatcodes these tests use.
/// @dev Signatures follow forge's cheatcode interface; forge answers them at
/// the fixed address below.
interface Vm {
    struct Log {
        bytes32[] topics;
        bytes data;
        address emitter;
    }

    function addr(uint256 privateKey) external pure returns (address);
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function label(address account, string calldata newLabel) external;
    function prank(address msgSender) external;
    function startPrank(address msgSender) external;
    function stopPrank() external;
    function warp(uint256 newTimestamp) external;
    function chainId(uint256 newChainId) external;
    function deal(address account, uint256 newBalance) external;
    function assume(bool condition) external pure;
    function expectRevert() external;
    function expectRevert(bytes4 revertData) external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit() external;
    function expectEmit(address emitter) external;
    function recordLogs() external;
    function record() external;
    function accesses(address target) external returns (bytes32[] memory reads, bytes32[] memory writes);
    function load(address target, bytes32 slot) external view returns (bytes32 data);
    function getRecordedLogs() external returns (Log[] memory logs);
    function lastCallGas() external view returns (Gas memory gas);
    function snapshotValue(string calldata name, uint256 value) external;

    struct Gas {
        uint64 gasLimit;
        uint64 gasTotalUsed;
        uint64 gasMemoryUsed;
        int64 gasRefunded;
        uint64 gasRemaining;
    }
}
