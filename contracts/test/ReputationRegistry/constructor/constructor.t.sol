// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReputationRegistry} from "../../../src/ReputationRegistry.sol";
import {IReputationRegistry} from "../../../src/interfaces/IReputationRegistry.sol";
import {ReputationBase} from "../ReputationBase.t.sol";

contract Constructor_Reputation_Unit_Test is ReputationBase {
    function test_RevertWhen_IdentityRegistryZero() public {
        // it should revert with ReputationRegistryZeroIdentityRegistry
        vm.expectRevert(
            abi.encodeWithSelector(IReputationRegistry.ReputationRegistryZeroIdentityRegistry.selector)
        );
        new ReputationRegistry(address(0));
    }

    function test_constructor_BindsTheIdentityRegistry() public view {
        // it should answer it from getIdentityRegistry
        assertEq(reputation.getIdentityRegistry(), address(identity), "identity registry");
        assertEq(uint256(int256(reputation.MAX_ABS_VALUE())), 1e38, "bound");
    }
}
