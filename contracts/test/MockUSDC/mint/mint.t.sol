// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {MockUSDC} from "../../../src/mocks/MockUSDC.sol";
import {Test} from "../../utils/Test.sol";

/// @notice Mirrors mint.tree.
contract MockUSDCTest is Test {
    MockUSDC internal usdc;
    address internal owner;
    address internal holder;
    uint256 internal holderKey;
    address internal spender;
    address internal stranger;

    function setUp() public {
        owner = makeAddr("owner");
        (holder, holderKey) = makeKey("holder");
        spender = makeAddr("spender");
        stranger = makeAddr("stranger");
        usdc = new MockUSDC(owner);
    }

    function test_metadata() public view {
        assertEq(usdc.decimals(), 6, "decimals");
        assertEq(usdc.name(), "USD Coin");
        assertEq(usdc.symbol(), "USDC");
        assertEq(usdc.owner(), owner, "owner");
    }

    function test_mint_byOwner() public {
        // it should credit the recipient and raise the total supply
        vm.prank(owner);
        usdc.mint(holder, 1_500_000);
        assertEq(usdc.balanceOf(holder), 1_500_000, "minted");
        assertEq(usdc.totalSupply(), 1_500_000, "supply");
    }

    function test_RevertWhen_mintByNonOwner() public {
        // it should revert with OwnableUnauthorizedAccount(caller)
        address[3] memory others = [holder, spender, stranger];
        for (uint256 i; i < others.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, others[i]));
            vm.prank(others[i]);
            usdc.mint(others[i], 1);
        }
        assertEq(usdc.totalSupply(), 0, "nothing minted");
    }

    function testFuzz_permit_setsAllowanceAndBumpsNonce(uint256 value, uint256 ttl) public {
        ttl = bound(ttl, 0, 365 days);
        uint256 deadline = block.timestamp + ttl;
        bytes32 typehash =
            keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");
        bytes32 structHash = keccak256(abi.encode(typehash, holder, spender, value, uint256(0), deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(holderKey, digest);

        vm.prank(stranger); // anyone may submit a permit
        usdc.permit(holder, spender, value, deadline, v, r, s);
        assertEq(usdc.allowance(holder, spender), value, "allowance");
        assertEq(usdc.nonces(holder), 1, "nonce");

        // The same signature cannot be replayed.
        vm.expectRevert();
        usdc.permit(holder, spender, value, deadline, v, r, s);
    }
}
