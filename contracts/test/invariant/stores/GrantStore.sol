// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";

/// @notice Ghost state of the grants the grant handler signed: each grant's
/// terms, the sum of the amounts of the tasks it was seen to fund, whether it
/// created its mark (and the mark's task id), whether its first use created it
/// and spent the whole budget (which writes no slot), and whether its sponsor
/// revoked it.
contract GrantStore {
    struct Ghost {
        ITaskEscrow.Grant grant;
        bytes32 digest;
        uint256 funded; // sum of the amounts of the tasks created under it, by any call that succeeded
        uint256 tasks;
        bool marked; // it created its mark (its task referenced by the digest)
        bool markedFull; // its first use created the mark and spent the budget
        uint256 markId; // the id the mark was created with, if marked
        bool revoked;
    }

    Ghost[] internal _grants;
    uint256[] internal _markedFull;

    /// @notice Marked first uses that spent the whole budget, other uses that
    /// created a mark (a first use of part of the budget, or a later use), and
    /// replays of grants spent in full by a marked first use (each must revert).
    uint256 public markedFullUses;
    uint256 public markedOtherUses;
    uint256 public replaysAttempted;

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

    /// @notice A use of grant `index` created its mark, task `markId`: `full` if
    /// it was the first use and spent the whole budget.
    function recordMark(uint256 index, bool full, uint256 markId) external {
        _grants[index].marked = true;
        _grants[index].markId = markId;
        if (full) {
            _grants[index].markedFull = true;
            _markedFull.push(index);
            ++markedFullUses;
        } else {
            ++markedOtherUses;
        }
    }

    function recordReplay() external {
        ++replaysAttempted;
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

    /// @notice One of the grants a marked first use spent in full, picked by
    /// `seed`; `found` false while there is none.
    function pickMarkedFull(uint256 seed) external view returns (bool found, uint256 index) {
        if (_markedFull.length == 0) return (false, 0);
        return (true, _markedFull[seed % _markedFull.length]);
    }
}
