// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {Base} from "../../Base.t.sol";

contract SmokeTest is Base {
    function test_lifecycle_permit() public {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        vm.prank(funder);
        usdc.approve(address(escrow), 0);
        (uint8 v, bytes32 r, bytes32 s) = _permit(p.amount, block.timestamp + 1 hours);
        ITaskEscrow.Task memory t = _expectedCreated(p, funder);
        vm.prank(funder);
        uint256 id = escrow.createTaskWithPermit(p, block.timestamp + 1 hours, v, r, s);
        _assertStored(id, t);
        t = _accept(id, t);
        t = _complete(id, t);
        vm.prank(client);
        escrow.approvePayment(id, t, RATING);
        assertEq(usdc.balanceOf(executor), AMOUNT, "executor paid");
    }
}
