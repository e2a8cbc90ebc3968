// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";

import {IIdentityRegistry} from "../../../src/interfaces/IIdentityRegistry.sol";
import {IdentityBase} from "../IdentityBase.t.sol";

contract Register_Identity_Unit_Test is IdentityBase {
    function _entries(string memory key, bytes memory value)
        internal
        pure
        returns (IIdentityRegistry.MetadataEntry[] memory e)
    {
        e = new IIdentityRegistry.MetadataEntry[](1);
        e[0] = IIdentityRegistry.MetadataEntry({metadataKey: key, metadataValue: value});
    }

    function test_RevertWhen_EntryUsesReservedKey() public {
        // it should revert with IdentityRegistryReservedKey
        vm.expectRevert(
            abi.encodeWithSelector(IIdentityRegistry.IdentityRegistryReservedKey.selector, WALLET_KEY)
        );
        vm.prank(agentOwner);
        identity.register(AGENT_URI, _entries(WALLET_KEY, abi.encodePacked(stranger)));
        assertEq(identity.agentCount(), 0, "nothing minted");
    }

    function test_register_WithURIAndMetadata() public {
        // it should store each metadata entry
        // it should emit {Transfer}, {MetadataSet} for agentWallet, one {MetadataSet} per entry, then
        // {Registered}
        IIdentityRegistry.MetadataEntry[] memory e = new IIdentityRegistry.MetadataEntry[](2);
        e[0] = IIdentityRegistry.MetadataEntry({metadataKey: "model", metadataValue: bytes("offline")});
        e[1] = IIdentityRegistry.MetadataEntry({metadataKey: "region", metadataValue: bytes("eu")});

        vm.expectEmit(address(identity));
        emit IERC721.Transfer(address(0), agentOwner, 1);
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(1, WALLET_KEY, WALLET_KEY, abi.encodePacked(agentOwner));
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(1, "model", "model", bytes("offline"));
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(1, "region", "region", bytes("eu"));
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.Registered(1, AGENT_URI, agentOwner);
        vm.prank(agentOwner);
        uint256 agentId = identity.register(AGENT_URI, e);

        assertEq(agentId, 1, "first id");
        assertEq(identity.ownerOf(1), agentOwner, "owner");
        assertEq(identity.tokenURI(1), AGENT_URI, "uri");
        assertEq(identity.getAgentWallet(1), agentOwner, "wallet");
        assertEq(identity.getMetadata(1, "model"), bytes("offline"), "model");
        assertEq(identity.getMetadata(1, "region"), bytes("eu"), "region");
        assertEq(identity.agentCount(), 1, "agentCount");
    }

    function test_register_WithURI() public {
        // it should mint the next agent id (from 1) to the caller
        // it should store the URI as the token URI (empty when none is given)
        // it should make the caller the agent wallet
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.MetadataSet(1, WALLET_KEY, WALLET_KEY, abi.encodePacked(agentOwner));
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.Registered(1, AGENT_URI, agentOwner);
        uint256 agentId = _mintAgent(agentOwner);
        assertEq(agentId, 1, "id");
        assertEq(identity.tokenURI(agentId), AGENT_URI, "uri");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet");
        assertEq(identity.balanceOf(agentOwner), 1, "balance");
    }

    function test_register_WithoutURI() public {
        // it should store the URI as the token URI (empty when none is given)
        // it should make the caller the agent wallet
        vm.expectEmit(address(identity));
        emit IIdentityRegistry.Registered(1, "", agentOwner);
        vm.prank(agentOwner);
        uint256 agentId = identity.register();
        assertEq(identity.tokenURI(agentId), "", "no uri yet");
        assertEq(identity.getAgentWallet(agentId), agentOwner, "wallet");
    }

    function test_register_SameCallerGetsNewIds() public {
        // it should mint the next agent id (from 1) to the caller
        // it should count the agent in agentCount
        // it should mint a new agent id
        uint256 first = _mintAgent(agentOwner);
        uint256 second = _mintAgent(agentOwner);
        uint256 third = _mintAgent(stranger);
        assertEq(first, 1, "first");
        assertEq(second, 2, "second");
        assertEq(third, 3, "third");
        assertEq(identity.balanceOf(agentOwner), 2, "two agents");
        assertEq(identity.agentCount(), 3, "agentCount");
    }
}
