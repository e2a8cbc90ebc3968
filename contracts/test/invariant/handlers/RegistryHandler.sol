// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IAgentRegistry} from "../../../src/interfaces/IAgentRegistry.sol";
import {AgentRegistry} from "../../../src/AgentRegistry.sol";
import {RegistryStore} from "../stores/RegistryStore.sol";
import {BaseHandler} from "./BaseHandler.sol";

/// @notice Calls every registry write as one of a few agents sharing a small
/// pool of capabilities at prices in [1, MAX_PRICE] (so ties are common), and
/// keeps the ghost record in step. `attemptRejected` makes writes that must
/// revert and records whether they did, with exactly the expected error.
contract RegistryHandler is BaseHandler {
    uint256 internal constant N_AGENTS = 8;
    uint256 internal constant MAX_PRICE = 8;

    AgentRegistry public immutable registry;
    RegistryStore public immutable store;

    address[] internal _agents;

    constructor(AgentRegistry registry_) {
        registry = registry_;
        for (uint256 i; i < N_AGENTS; ++i) {
            _agents.push(_named(string(abi.encodePacked("inv-agent-", bytes1(uint8(48 + i))))));
        }
        store = new RegistryStore(_agents);
    }

    modifier instrument(bytes32 name) {
        store.countCall(name);
        _;
    }

    /*//////////////////////////////////////////////////////////////
                                WRITES
    //////////////////////////////////////////////////////////////*/

    function register(uint256 agentSeed, uint256 maskSeed, uint256 priceSeed, bool otherURI)
        external
        instrument("register")
    {
        (bool found, address a) = _pickAgent(agentSeed, _isNone);
        if (!found) return;
        uint256 mask = maskSeed % (2 ** store.N_CAPS() - 1) + 1; // never empty
        uint256 n;
        for (uint256 c; c < store.N_CAPS(); ++c) {
            if (mask & (1 << c) != 0) ++n;
        }
        bytes32[] memory caps = new bytes32[](n);
        uint128[] memory prices = new uint128[](n);
        uint256 k;
        uint256 start = (maskSeed / 32) % store.N_CAPS();
        for (uint256 j; j < store.N_CAPS(); ++j) {
            uint256 c = (start + j) % store.N_CAPS();
            if (mask & (1 << c) == 0) continue;
            caps[k] = store.capabilityAt(c);
            prices[k] = _price(uint256(keccak256(abi.encode(priceSeed, c))));
            ++k;
        }
        string memory uri = _uri(otherURI);
        vm.prank(a);
        registry.register(uri, caps, prices);
        store.setStatus(a, IAgentRegistry.AgentStatus.Active);
        store.setMetadataURI(a, uri);
        for (uint256 i; i < n; ++i) {
            store.setPrice(a, caps[i], prices[i]);
        }
    }

    function addCapability(uint256 agentSeed, uint256 capSeed, uint256 priceSeed)
        external
        instrument("addCapability")
    {
        (bool found, address a) = _pickAgent(agentSeed, _canAdd);
        if (!found) return;
        bytes32 c = _pickCap(a, capSeed, false);
        uint128 price = _price(priceSeed);
        vm.prank(a);
        registry.addCapability(c, price);
        store.setPrice(a, c, price);
    }

    function updatePrice(uint256 agentSeed, uint256 capSeed, uint256 priceSeed)
        external
        instrument("updatePrice")
    {
        (bool found, address a) = _pickAgent(agentSeed, _isRegistered);
        if (!found) return;
        bytes32 c = _pickCap(a, capSeed, true);
        uint128 price = _price(priceSeed);
        vm.prank(a);
        registry.updatePrice(c, price);
        store.setPrice(a, c, price);
    }

    function removeCapability(uint256 agentSeed, uint256 capSeed) external instrument("removeCapability") {
        (bool found, address a) = _pickAgent(agentSeed, _canRemove);
        if (!found) return;
        bytes32 c = _pickCap(a, capSeed, true);
        vm.prank(a);
        registry.removeCapability(c);
        store.setPrice(a, c, 0);
    }

    function setMetadataURI(uint256 agentSeed, bool otherURI) external instrument("setMetadataURI") {
        (bool found, address a) = _pickAgent(agentSeed, _isRegistered);
        if (!found) return;
        string memory uri = _uri(otherURI);
        vm.prank(a);
        registry.setMetadataURI(uri);
        store.setMetadataURI(a, uri);
    }

    function pause(uint256 agentSeed) external instrument("pause") {
        (bool found, address a) = _pickAgent(agentSeed, _isActive);
        if (!found) return;
        vm.prank(a);
        registry.pause();
        store.setStatus(a, IAgentRegistry.AgentStatus.Paused);
    }

    function resume(uint256 agentSeed) external instrument("resume") {
        (bool found, address a) = _pickAgent(agentSeed, _isPaused);
        if (!found) return;
        vm.prank(a);
        registry.resume();
        store.setStatus(a, IAgentRegistry.AgentStatus.Active);
    }

    function leave(uint256 agentSeed) external instrument("leave") {
        (bool found, address a) = _pickAgent(agentSeed, _isRegistered);
        if (!found) return;
        vm.prank(a);
        registry.leave();
        store.clear(a);
    }

    /// @notice A write that must revert, chosen to fit the agent's state.
    function attemptRejected(uint256 agentSeed, uint256 kindSeed) external instrument("attemptRejected") {
        address a = _agents[agentSeed % N_AGENTS];
        IAgentRegistry.AgentStatus s = store.status(a);
        bytes32 anyCap = store.capabilityAt(kindSeed % store.N_CAPS());

        if (s == IAgentRegistry.AgentStatus.None) {
            bytes memory data;
            uint256 which = kindSeed % 7;
            if (which == 0) data = abi.encodeCall(IAgentRegistry.addCapability, (anyCap, 1));
            else if (which == 1) data = abi.encodeCall(IAgentRegistry.updatePrice, (anyCap, 1));
            else if (which == 2) data = abi.encodeCall(IAgentRegistry.removeCapability, (anyCap));
            else if (which == 3) data = abi.encodeCall(IAgentRegistry.setMetadataURI, ("ipfs://x"));
            else if (which == 4) data = abi.encodeCall(IAgentRegistry.pause, ());
            else if (which == 5) data = abi.encodeCall(IAgentRegistry.resume, ());
            else data = abi.encodeCall(IAgentRegistry.leave, ());
            _expectRejected(
                a, data, abi.encodeWithSelector(IAgentRegistry.AgentRegistryNotRegistered.selector, a)
            );
            return;
        }

        uint256 kind = kindSeed % 8;
        bytes32 offered = _pickCap(a, kindSeed, true);
        if (kind == 0) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.register, ("ipfs://again", _one(anyCap), _onePrice(1))),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryAlreadyRegistered.selector, a)
            );
        } else if (kind == 1) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.addCapability, (offered, 1)),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryDuplicateCapability.selector, offered)
            );
        } else if (kind == 2) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.updatePrice, (offered, 0)),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryZeroPrice.selector, offered)
            );
        } else if (kind == 3 && store.capabilityCount(a) < store.N_CAPS()) {
            bytes32 missing = _pickCap(a, kindSeed, false);
            bytes memory data = kindSeed % 2 == 0
                ? abi.encodeCall(IAgentRegistry.updatePrice, (missing, 1))
                : abi.encodeCall(IAgentRegistry.removeCapability, (missing));
            _expectRejected(
                a,
                data,
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryUnknownCapability.selector, missing)
            );
        } else if (kind == 4 && store.capabilityCount(a) == 1) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.removeCapability, (offered)),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryCapabilityCount.selector, 0, 32)
            );
        } else if (kind == 5) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.setMetadataURI, ("")),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyMetadata.selector)
            );
        } else if (kind == 6) {
            _expectRejected(
                a,
                abi.encodeCall(IAgentRegistry.addCapability, (bytes32(0), 1)),
                abi.encodeWithSelector(IAgentRegistry.AgentRegistryEmptyCapability.selector)
            );
        } else {
            // Pause while paused, or resume while active.
            bytes memory data = s == IAgentRegistry.AgentStatus.Paused
                ? abi.encodeCall(IAgentRegistry.pause, ())
                : abi.encodeCall(IAgentRegistry.resume, ());
            _expectRejected(
                a, data, abi.encodeWithSelector(IAgentRegistry.AgentRegistryInvalidStatus.selector, a, s)
            );
        }
    }

    /*//////////////////////////////////////////////////////////////
                                HELPERS
    //////////////////////////////////////////////////////////////*/

    function agents() external view returns (address[] memory) {
        return _agents;
    }

    function _isNone(address a) internal view returns (bool) {
        return store.status(a) == IAgentRegistry.AgentStatus.None;
    }

    function _isRegistered(address a) internal view returns (bool) {
        return store.status(a) != IAgentRegistry.AgentStatus.None;
    }

    function _isActive(address a) internal view returns (bool) {
        return store.status(a) == IAgentRegistry.AgentStatus.Active;
    }

    function _isPaused(address a) internal view returns (bool) {
        return store.status(a) == IAgentRegistry.AgentStatus.Paused;
    }

    function _canAdd(address a) internal view returns (bool) {
        return _isRegistered(a) && store.capabilityCount(a) < store.N_CAPS();
    }

    function _canRemove(address a) internal view returns (bool) {
        return _isRegistered(a) && store.capabilityCount(a) > 1;
    }

    /// @dev The first agent, from a random start, that `ok` accepts.
    function _pickAgent(uint256 seed, function(address) internal view returns (bool) ok)
        internal
        view
        returns (bool, address)
    {
        for (uint256 k; k < N_AGENTS; ++k) {
            address a = _agents[(seed % N_AGENTS + k) % N_AGENTS];
            if (ok(a)) return (true, a);
        }
        return (false, address(0));
    }

    /// @dev A capability `a` offers (`offered`) or does not; the caller makes sure one exists.
    function _pickCap(address a, uint256 seed, bool offered) internal view returns (bytes32 c) {
        for (uint256 k; k < store.N_CAPS(); ++k) {
            c = store.capabilityAt((seed % store.N_CAPS() + k) % store.N_CAPS());
            if ((store.priceOf(a, c) != 0) == offered) return c;
        }
    }

    function _price(uint256 seed) internal pure returns (uint128) {
        return uint128(bound(seed, 1, MAX_PRICE));
    }

    function _uri(bool other) internal pure returns (string memory) {
        return other ? "data:application/json,{\"name\":\"agent\"}" : "ipfs://agent-card";
    }

    function _one(bytes32 c) internal pure returns (bytes32[] memory l) {
        l = new bytes32[](1);
        l[0] = c;
    }

    function _onePrice(uint128 p) internal pure returns (uint128[] memory l) {
        l = new uint128[](1);
        l[0] = p;
    }

    function _expectRejected(address caller, bytes memory data, bytes memory expected) internal {
        vm.prank(caller);
        (bool ok, bytes memory ret) = address(registry).call(data);
        if (ok) store.recordUnexpectedSuccess();
        else if (keccak256(ret) == keccak256(expected)) store.recordExpectedRevert();
        else store.recordWrongRevert(ret);
    }
}
