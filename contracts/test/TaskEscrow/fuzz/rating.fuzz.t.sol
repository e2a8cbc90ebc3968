// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITaskEscrow} from "../../../src/interfaces/ITaskEscrow.sol";
import {EscrowBase} from "../EscrowBase.sol";

/// @notice Fuzzed ratings: any rating 0..255 of an approval either reverts with
/// TaskEscrowInvalidRating (above MAX_RATING), leaving the task Completed and
/// its money in the escrow, or is emitted in {TaskSettled} exactly as given.
contract RatingFuzzTest is EscrowBase {
    function _expectRating(uint256 id, uint8 rating) internal {
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskSettled(
            id,
            ITaskEscrow.Status.Paid,
            ITaskEscrow.Settlement.Approved,
            AMOUNT,
            0,
            rating,
            uint40(block.timestamp)
        );
    }

    function testFuzz_approvePayment_rating(uint8 rating) public {
        (uint256 id, ITaskEscrow.Task memory t) = _completed();
        uint256 held = usdc.balanceOf(address(escrow));
        vm.prank(client);
        if (rating > 100) {
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidRating.selector, rating));
            escrow.approvePayment(id, t, rating);
            _assertStored(id, t);
            assertEq(usdc.balanceOf(address(escrow)), held, "nothing paid");
        } else {
            _expectRating(id, rating);
            escrow.approvePayment(id, t, rating);
            _assertStored(id, _settled(t, ITaskEscrow.Status.Paid, BPS));
            assertEq(held - usdc.balanceOf(address(escrow)), AMOUNT, "paid in full");
        }
    }

    /// @dev A batch of three: it reverts with the first rating above 100, else
    /// each item's {TaskSettled} carries its own rating.
    function testFuzz_approvePayments_ratings(uint8[3] memory ratings) public {
        uint256[] memory ids = new uint256[](3);
        ITaskEscrow.Task[] memory ts = new ITaskEscrow.Task[](3);
        uint8[] memory rs = new uint8[](3);
        uint256 firstBad = 3;
        for (uint256 i; i < 3; ++i) {
            (ids[i], ts[i]) = _completed();
            // Half the items within range, so both outcomes come up.
            rs[i] = i % 2 == 0 ? uint8(bound(ratings[i], 0, 100)) : ratings[i];
            if (rs[i] > 100 && firstBad == 3) firstBad = i;
        }
        uint256 held = usdc.balanceOf(address(escrow));
        if (firstBad < 3) {
            vm.expectRevert(
                abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidRating.selector, rs[firstBad])
            );
        } else {
            for (uint256 i; i < 3; ++i) {
                _expectRating(ids[i], rs[i]);
            }
        }
        vm.prank(client);
        escrow.approvePayments(ids, ts, rs);
        for (uint256 i; i < 3; ++i) {
            _assertStored(ids[i], firstBad < 3 ? ts[i] : _settled(ts[i], ITaskEscrow.Status.Paid, BPS));
        }
        assertEq(held - usdc.balanceOf(address(escrow)), firstBad < 3 ? 0 : 3 * AMOUNT, "all or nothing");
    }
}
