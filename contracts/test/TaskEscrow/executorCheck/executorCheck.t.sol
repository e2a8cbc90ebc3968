// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Mirrors executorCheck.tree: money is escrowed only for an executor
/// the registry lists as active and offering the task's capability at no more
/// than its amount — at creation (single and batch) and at reassignment.
contract ExecutorCheckTest is EscrowBase {
    bytes32 internal constant OTHER = "translate";

    function _expectNotOffering(address who, bytes32 cap, uint128 amount) internal {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowExecutorNotOffering.selector, who, cap, amount)
        );
    }

    function _createFor(address who, bytes32 cap, uint128 amount) internal {
        ITaskEscrow.CreateParams memory p = _params(_nextRef());
        (p.executor, p.capability, p.amount) = (who, cap, amount);
        vm.prank(funder);
        escrow.createTask(p);
    }

    function test_RevertWhen_ExecutorUnregistered() public {
        // it should revert with TaskEscrowExecutorNotOffering
        _expectNotOffering(stranger, CAPABILITY, AMOUNT);
        _createFor(stranger, CAPABILITY, AMOUNT);
    }

    function test_RevertWhen_ExecutorPaused() public {
        // it should revert with TaskEscrowExecutorNotOffering
        vm.prank(executor);
        registry.pause();
        _expectNotOffering(executor, CAPABILITY, AMOUNT);
        _createFor(executor, CAPABILITY, AMOUNT);
    }

    function test_RevertWhen_ExecutorLeft() public {
        // it should revert with TaskEscrowExecutorNotOffering
        vm.prank(executor);
        registry.leave();
        _expectNotOffering(executor, CAPABILITY, AMOUNT);
        _createFor(executor, CAPABILITY, AMOUNT);
    }

    function test_RevertWhen_CapabilityNotOffered() public {
        // it should revert with TaskEscrowExecutorNotOffering
        _expectNotOffering(executor, OTHER, AMOUNT);
        _createFor(executor, OTHER, AMOUNT);
    }

    function test_RevertWhen_PriceAboveAmount() public {
        // it should revert with TaskEscrowExecutorNotOffering
        vm.prank(executor);
        registry.updatePrice(CAPABILITY, AMOUNT + 1);
        _expectNotOffering(executor, CAPABILITY, AMOUNT);
        _createFor(executor, CAPABILITY, AMOUNT);
    }

    function test_create_priceEqualToAmount() public {
        // it should escrow the task (or reassign it) as usual
        vm.prank(executor);
        registry.updatePrice(CAPABILITY, AMOUNT);
        _createFor(executor, CAPABILITY, AMOUNT);
    }

    function testFuzz_create_onlyAtOrAbovePrice(uint128 price, uint128 amount) public {
        // it should revert with TaskEscrowExecutorNotOffering
        // it should escrow the task (or reassign it) as usual
        price = uint128(bound(price, 1, 1e12));
        amount = uint128(bound(amount, 1, 1e12));
        vm.prank(executor);
        registry.updatePrice(CAPABILITY, price);
        if (price > amount) _expectNotOffering(executor, CAPABILITY, amount);
        _createFor(executor, CAPABILITY, amount);
    }

    function test_RevertWhen_ReassignedToOneNotOffering() public {
        // it should revert with TaskEscrowExecutorNotOffering
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 deadline = uint40(block.timestamp + 2 days);
        vm.prank(client);
        _expectNotOffering(stranger, CAPABILITY, AMOUNT);
        escrow.reassignTask(id, t, stranger, deadline, CAPABILITY);
        vm.prank(client);
        _expectNotOffering(executor2, OTHER, AMOUNT);
        escrow.reassignTask(id, t, executor2, deadline, OTHER);
        vm.prank(executor2);
        registry.pause();
        vm.prank(client);
        _expectNotOffering(executor2, CAPABILITY, AMOUNT);
        escrow.reassignTask(id, t, executor2, deadline, CAPABILITY);
    }

    function test_reassign_toOneOffering() public {
        // it should escrow the task (or reassign it) as usual
        (uint256 id, ITaskEscrow.Task memory t) = _create();
        uint40 deadline = uint40(block.timestamp + 2 days);
        vm.prank(client);
        escrow.reassignTask(id, t, executor2, deadline, CAPABILITY);
        t.executor = executor2;
        t.deadline = deadline;
        t.updatedAt = uint40(block.timestamp);
        _assertStored(id, t);
    }
}
