// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IdentityRegistry} from "../../src/IdentityRegistry.sol";
import {ReputationRegistry} from "../../src/ReputationRegistry.sol";
import {Test} from "../utils/Test.sol";
import {Erc8004Handler} from "./handlers/Erc8004Handler.sol";
import {Erc8004Store} from "./stores/Erc8004Store.sol";

/// @notice Invariants of the ERC-8004 identity and reputation registries under
/// random sequences of every write by a few actors. See README.md.
contract Erc8004_Invariant_Test is Test {
    IdentityRegistry internal identity;
    ReputationRegistry internal reputation;
    Erc8004Handler internal handler;
    Erc8004Store internal store;

    function setUp() public {
        vm.warp(1_700_000_000);
        identity = new IdentityRegistry();
        reputation = new ReputationRegistry(address(identity));
        handler = new Erc8004Handler(identity, reputation);
        store = handler.store();

        bytes4[] memory selectors = new bytes4[](10);
        selectors[0] = Erc8004Handler.register.selector;
        selectors[1] = Erc8004Handler.register.selector;
        selectors[2] = Erc8004Handler.transfer.selector;
        selectors[3] = Erc8004Handler.setWallet.selector;
        selectors[4] = Erc8004Handler.unsetWallet.selector;
        selectors[5] = Erc8004Handler.giveFeedback.selector;
        selectors[6] = Erc8004Handler.giveFeedback.selector;
        selectors[7] = Erc8004Handler.revokeFeedback.selector;
        selectors[8] = Erc8004Handler.appendResponse.selector;
        selectors[9] = Erc8004Handler.attemptRejected.selector;
        targetContract(address(handler));
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @dev 15. Every agent id from 1 to agentCount exists, is owned by its ghost
    /// owner and has its ghost wallet (cleared on every transfer); balances add up.
    function invariant_identitiesMatchGhost() external view {
        uint256 n = store.agentCount();
        assertEq(identity.agentCount(), n, "agentCount");
        address[] memory actors = handler.actors();
        uint256 balances;
        for (uint256 i; i < actors.length; ++i) {
            balances += identity.balanceOf(actors[i]);
        }
        assertEq(balances, n, "every agent owned by an actor");
        for (uint256 id = 1; id <= n; ++id) {
            assertEq(identity.ownerOf(id), store.ownerOf(id), "owner");
            assertEq(identity.getAgentWallet(id), store.walletOf(id), "wallet");
        }
    }

    /// @dev 16. Every feedback entry reads back as given, revoked exactly when its
    /// client revoked it; indexes count per client from 1; the client list is
    /// the clients in order of first feedback; response counts match.
    function invariant_feedbackMatchesGhost() external view {
        uint256 n = store.agentCount();
        address[] memory actors = handler.actors();
        for (uint256 id = 1; id <= n; ++id) {
            address[] memory clients = reputation.getClients(id);
            address[] memory ghostClients = store.clients(id);
            assertEq(clients.length, ghostClients.length, "client count");
            for (uint256 c; c < clients.length; ++c) {
                assertEq(clients[c], ghostClients[c], "client order");
            }
            for (uint256 a; a < actors.length; ++a) {
                Erc8004Store.Entry[] memory e = store.entries(id, actors[a]);
                assertEq(reputation.getLastIndex(id, actors[a]), e.length, "last index");
                for (uint256 k; k < e.length; ++k) {
                    (int128 value, uint8 decimals,,, bool revoked) =
                        reputation.readFeedback(id, actors[a], uint64(k + 1));
                    assertEq(value, e[k].value, "value");
                    assertEq(decimals, e[k].decimals, "decimals");
                    assertEq(revoked, e[k].revoked, "revoked");
                    assertEq(
                        reputation.getResponseCount(id, actors[a], uint64(k + 1), new address[](0)),
                        e[k].responses,
                        "responses"
                    );
                }
            }
        }
    }

    /// @dev 17. getSummary over every actor is the ghost's count of unrevoked
    /// entries and their average at the most used decimals (fewest on a tie),
    /// truncated toward zero.
    function invariant_summaryMatchesGhost() external view {
        uint256 n = store.agentCount();
        address[] memory actors = handler.actors();
        for (uint256 id = 1; id <= n; ++id) {
            int256 sumWad;
            uint64 count;
            uint64 coarse;
            uint64 fine;
            for (uint256 a; a < actors.length; ++a) {
                Erc8004Store.Entry[] memory e = store.entries(id, actors[a]);
                for (uint256 k; k < e.length; ++k) {
                    if (e[k].revoked) continue;
                    sumWad += int256(e[k].value) * int256(10 ** (18 - uint256(e[k].decimals)));
                    ++count;
                    if (e[k].decimals == 0) ++coarse;
                    else ++fine;
                }
            }
            (uint64 c, int128 value, uint8 decimals) = reputation.getSummary(id, actors, "", "");
            assertEq(c, count, "count");
            if (count == 0) {
                assertEq(value, 0, "no value");
                assertEq(decimals, 0, "no decimals");
                continue;
            }
            uint8 mode = fine > coarse ? 2 : 0;
            assertEq(decimals, mode, "mode decimals");
            assertEq(value, sumWad / int256(uint256(count)) / int256(10 ** (18 - uint256(mode))), "average");
        }
    }

    /// @dev 18. Every write made to be rejected (self-feedback, revoking an
    /// unknown or revoked entry, a stranger managing an agent, a wallet proof by
    /// another key, an out-of-range value) reverted with exactly its error.
    function invariant_rejectedWritesRevertExactly() external view {
        assertEq(store.unexpectedSuccesses(), 0, "a rejected write succeeded");
        assertEq(store.wrongReverts(), 0, "a rejected write reverted with another error");
    }
}
