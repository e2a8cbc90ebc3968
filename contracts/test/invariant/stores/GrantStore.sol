// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";

/// @notice Ghost state of the grants the grant handler signed: each grant's
/// terms, the sum of the amounts of the tasks it was seen to fund, and whether
/// its sponsor revoked it.
contract GrantStore {
    struct Ghost {
        ITaskEscrow.Grant grant;
        bytes32 digest;
        uint256 funded; // sum of the amounts of the tasks created under it
        uint256 tasks;
        bool revoked;
    }

    Ghost[] internal _grants;

    function add(ITaskEscrow.Grant calldata g, bytes32 digest) external returns (uint256 index) {
        index = _grants.length;
        Ghost storage x = _grants.push();
        x.grant = g;
        x.digest = digest;
    }

    function addFunded(uint256 index, uint256 amount, uint256 tasks) external {
        _grants[index].funded += amount;
        _grants[index].tasks += tasks;
    }

    function setRevoked(uint256 index) external {
        _grants[index].revoked = true;
    }

    function count() external view returns (uint256) {
        return _grants.length;
    }

    function ghost(uint256 index) external view returns (Ghost memory) {
        return _grants[index];
    }
}
