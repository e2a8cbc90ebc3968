// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Vm} from "../../utils/Vm.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice The rulings' events follow the state they describe: {DisputeRuled}
/// (or {AppealRuled}) is logged after the write, and {TaskSettled} right after
/// it when the ruling settles at once.
contract RulingEventOrderTest is EscrowBase {
    function _sigs() internal returns (bytes32[] memory out) {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 n;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(escrow)) ++n;
        }
        out = new bytes32[](n);
        n = 0;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(escrow)) out[n++] = logs[i].topics[0];
        }
    }

    function test_disputeRuled_thenSettled_whenFinalAtOnce() public {
        _setWindows(DISPUTE_WINDOW, 0);
        (uint256 id, ITaskEscrow.Task memory t) = _disputed();
        vm.recordLogs();
        vm.prank(arbiter);
        escrow.resolveDispute(id, t, 6000, "ipfs://rationale");
        bytes32[] memory sigs = _sigs();
        assertEq(sigs.length, 2, "two escrow events");
        assertEq(sigs[0], ITaskEscrow.DisputeRuled.selector, "the ruling first");
        assertEq(sigs[1], ITaskEscrow.TaskSettled.selector, "then the settlement");
    }

    function test_appealRuled_thenSettled() public {
        (uint256 id, ITaskEscrow.Task memory t) = _appealed(6000);
        vm.recordLogs();
        vm.prank(appealArbiter);
        escrow.resolveAppeal(id, t, 2500, "ipfs://appeal-rationale");
        bytes32[] memory sigs = _sigs();
        assertEq(sigs.length, 2, "two escrow events");
        assertEq(sigs[0], ITaskEscrow.AppealRuled.selector, "the appeal ruling first");
        assertEq(sigs[1], ITaskEscrow.TaskSettled.selector, "then the settlement");
    }
}
