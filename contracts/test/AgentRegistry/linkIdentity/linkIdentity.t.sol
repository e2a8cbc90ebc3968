// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC721Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";

import {AgentRegistry} from "../../../src/AgentRegistry.sol";
import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {RegistryBase} from "../RegistryBase.t.sol";

contract LinkIdentity_Unit_Test is RegistryBase {
    uint256 internal agentId;

    function setUp() public override {
        RegistryBase.setUp();
        _registerDefault(agent);
        vm.prank(agent);
        agentId = identity.register("ipfs://registration");
    }

    function _assertLinked(address who, bool linked, uint256 id) internal view {
        (bool l, uint256 got) = registry.identityOf(who);
        assertEq(l, linked, "linked");
        assertEq(got, id, "agent id");
    }

    function test_RevertWhen_NoIdentityRegistry() public {
        // it should revert with AgentRegistryNoIdentityRegistry
        AgentRegistry bare = new AgentRegistry(address(0));
        vm.prank(agent);
        bare.register(URI, _caps(CAP_A), _prices(PRICE_A));
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNoIdentityRegistry.selector));
        vm.prank(agent);
        bare.linkIdentity(agentId);
        assertEq(bare.identityRegistry(), address(0), "none");
    }

    function test_RevertWhen_CallerNotRegistered() public {
        // it should revert with AgentRegistryNotRegistered
        vm.prank(stranger);
        uint256 strangers = identity.register();
        vm.expectRevert(abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.linkIdentity(strangers);
    }

    function test_RevertWhen_AgentIdUnknown() public {
        // it should revert with ERC721NonexistentToken
        vm.expectRevert(abi.encodeWithSelector(IERC721Errors.ERC721NonexistentToken.selector, agentId + 1));
        vm.prank(agent);
        registry.linkIdentity(agentId + 1);
    }

    function test_RevertWhen_NotIdentityController() public {
        // it should revert with AgentRegistryNotIdentityController
        vm.prank(stranger);
        uint256 strangers = identity.register();
        vm.expectRevert(
            abi.encodeWithSelector(
                IAgentRegistry.AgentRegistryNotIdentityController.selector, agent, strangers
            )
        );
        vm.prank(agent);
        registry.linkIdentity(strangers);
        // An operator of the owner manages the identity but is not it.
        vm.prank(stranger);
        identity.setApprovalForAll(agent, true);
        vm.expectRevert(
            abi.encodeWithSelector(
                IAgentRegistry.AgentRegistryNotIdentityController.selector, agent, strangers
            )
        );
        vm.prank(agent);
        registry.linkIdentity(strangers);
        _assertLinked(agent, false, 0);
    }

    function test_linkIdentity_ByOwner() public {
        // it should answer the agent id from identityOf
        // it should emit {IdentityLinked}
        _assertLinked(agent, false, 0);
        vm.expectEmit(address(registry));
        emit IAgentRegistry.IdentityLinked(agent, agentId);
        vm.prank(agent);
        registry.linkIdentity(agentId);
        _assertLinked(agent, true, agentId);
        _assertLinked(agent2, false, 0);
        assertEq(registry.identityRegistry(), address(identity), "identity registry");
    }

    function test_linkIdentity_ByAgentWallet() public {
        // it should answer the agent id from identityOf
        // The identity is owned elsewhere (a cold key); the agent is its proven wallet.
        address cold = makeAddr("cold");
        vm.prank(cold);
        uint256 id = identity.register();
        (, uint256 agentKey) = makeKey("executor");
        uint256 deadline = block.timestamp + 60;
        bytes32 digest = identity.agentWalletDigest(id, agent, cold, deadline);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(agentKey, digest);
        vm.prank(cold);
        identity.setAgentWallet(id, agent, deadline, abi.encodePacked(r, s, v));

        vm.prank(agent);
        registry.linkIdentity(id);
        _assertLinked(agent, true, id);
    }

    function test_linkIdentity_WhilePausedAndRelinked() public {
        // it should link
        // it should replace the link
        vm.prank(agent);
        registry.pause();
        vm.prank(agent);
        registry.linkIdentity(agentId);
        _assertLinked(agent, true, agentId);
        vm.prank(agent);
        uint256 second = identity.register();
        vm.prank(agent);
        registry.linkIdentity(second);
        _assertLinked(agent, true, second);
    }

    function test_linkIdentity_DroppedOnLeave() public {
        // it should drop the link
        vm.prank(agent);
        registry.linkIdentity(agentId);
        vm.prank(agent);
        registry.leave();
        _assertLinked(agent, false, 0);
        _registerDefault(agent);
        _assertLinked(agent, false, 0);
    }
}
