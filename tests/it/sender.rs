//! The sender on a chain with timed blocks: a transaction priced out by a
//! fee spike is replaced at a higher fee, with the same nonce, and the
//! replacement is what gets mined; a transaction whose nonce another
//! sender for the key took is reported dropped, not waited on.

use std::time::Duration;

use alloy::{consensus::Transaction, primitives::U256, providers::Provider};
use serde_json::Value;
use tessera_anvil::deploy::DeployConfig;
use tessera_bindings::{MockUSDC, heads::Heads, sender::Sender};
use tessera_e2e::TestEnv;

#[tokio::test]
async fn a_transaction_stuck_under_a_fee_spike_is_replaced_and_the_replacement_mined() {
    let env = TestEnv::start(DeployConfig::default()).await;
    let p = &env.provider;
    // No block until the stage is set.
    p.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.unwrap();
    let heads = Heads::connect(Some(&env.chain.ws_endpoint()), Duration::from_secs(1)).await;
    let watch = heads.watch().expect("subscribed");
    let sender = Sender::new(p.clone());
    let token = MockUSDC::new(env.deployment.token, p.clone());
    let sponsor = env.actors.sponsor.address();
    let spender = env.actors.agent(0);
    let approve = token.approve(spender, U256::from(7));
    let pending = sender.send(approve, sponsor, Some(&watch)).await.unwrap();
    let first = pending.hash();
    let sent = p.get_transaction_by_hash(first).await.unwrap().expect("in the pool");
    // The next block's base fee is eight times what the transaction offers:
    // left alone it would wait about ten blocks for the fee to decay.
    let spike = U256::from(sent.max_fee_per_gas() * 8);
    p.raw_request::<_, Value>("anvil_setNextBlockBaseFeePerGas".into(), (spike,)).await.unwrap();
    let start = p.get_block_number().await.unwrap();
    p.raw_request::<_, Value>("evm_setIntervalMining".into(), (1u64,)).await.unwrap();

    let receipt =
        tokio::time::timeout(Duration::from_secs(60), sender.mined(pending, heads.watch()))
            .await
            .expect("mined within a minute")
            .expect("mined");
    assert_ne!(receipt.transaction_hash, first, "the replacement was mined, not the original");
    let mined = p.get_transaction_by_hash(receipt.transaction_hash).await.unwrap().unwrap();
    assert_eq!(mined.nonce(), sent.nonce(), "a replacement keeps the nonce");
    assert!(mined.max_fee_per_gas() > sent.max_fee_per_gas(), "at a higher fee");
    assert!(p.get_transaction_receipt(first).await.unwrap().is_none(), "the original is gone");
    let block = receipt.block_number.unwrap();
    assert!(
        block - start <= 6,
        "replaced after a few heads, not ten: mined {} blocks in",
        block - start
    );
    let allowance = token.allowance(sponsor, spender).call().await.unwrap();
    assert_eq!(allowance, U256::from(7), "the call took effect once");
}

/// The same fee spike, with the sender fenced off once the transaction is
/// out (a replica that lost its lane's lease): through eight priced-out
/// blocks the stuck transaction is not replaced (unfenced, it is after
/// three heads, and the replacement mined), and nothing new is sent.
#[tokio::test]
async fn a_fenced_off_sender_neither_replaces_a_stuck_transaction_nor_sends() {
    use std::sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    };

    use tessera_bindings::client::ClientError;

    let env = TestEnv::start(DeployConfig::default()).await;
    let p = &env.provider;
    p.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.unwrap();
    let heads = Heads::connect(Some(&env.chain.ws_endpoint()), Duration::from_secs(1)).await;
    let watch = heads.watch().expect("subscribed");
    let sender = Sender::new(p.clone());
    let holds = Arc::new(AtomicBool::new(true));
    let lease = Arc::clone(&holds);
    sender.fence(move || lease.load(Ordering::SeqCst));
    let token = MockUSDC::new(env.deployment.token, p.clone());
    let sponsor = env.actors.sponsor.address();
    let spender = env.actors.agent(0);
    let pending = sender.send(token.approve(spender, U256::from(7)), sponsor, Some(&watch)).await;
    let pending = pending.expect("sent while the lease is held");
    let first = pending.hash();
    let sent = p.get_transaction_by_hash(first).await.unwrap().expect("in the pool");
    // The lease is lost; the blocks' base fee is eight times what the
    // transaction offers.
    holds.store(false, Ordering::SeqCst);
    let again = sender.send(token.approve(spender, U256::from(8)), sponsor, Some(&watch)).await;
    assert!(matches!(again, Err(ClientError::Fenced)), "{again:?}");
    let spike = U256::from(sent.max_fee_per_gas() * 8);
    p.raw_request::<_, Value>("anvil_setNextBlockBaseFeePerGas".into(), (spike,)).await.unwrap();
    let start = p.get_block_number().await.unwrap();
    let waiting = tokio::spawn({
        let sender = sender.clone();
        let watch = heads.watch();
        async move { sender.mined(pending, watch).await }
    });
    // Eight blocks priced out, one at a time, the spike held.
    for n in 1..=8u64 {
        p.raw_request::<_, Value>("anvil_setNextBlockBaseFeePerGas".into(), (spike,))
            .await
            .unwrap();
        p.raw_request::<_, Value>("evm_mine".into(), ()).await.unwrap();
        while p.get_block_number().await.unwrap() < start + n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Each head announced and looked at before the next.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Nothing of the sponsor's was mined: not the original (priced out,
    // and dropped by the node), and no replacement at a higher fee.
    waiting.abort();
    for n in start + 1..=start + 8 {
        let receipts = p.get_block_receipts(n.into()).await.unwrap().unwrap_or_default();
        assert!(receipts.iter().all(|r| r.from != sponsor), "block {n}: {receipts:?}");
    }
    assert_eq!(p.get_transaction_count(sponsor).await.unwrap(), sent.nonce(), "nothing sent");
    let allowance = token.allowance(sponsor, spender).call().await.unwrap();
    assert_eq!(allowance, U256::ZERO);
}

/// Two senders for one key: the sponsor's transaction goes out at nonce
/// `n`, and another sender for the same key (another process, a tool with
/// a nonce of its own) sends a transaction of its own at `n` with a higher
/// fee, which the node keeps instead. Once that one is mined, the first
/// can never be: `mined` says so ([`ClientError::Dropped`], naming the
/// nonce and the version sent) a block or two later, with or without a
/// block subscription, instead of waiting out its timeout; nothing of the
/// dropped call happened, and the sender's next transaction takes the
/// next nonce and is mined.
#[tokio::test]
async fn a_transaction_whose_nonce_another_sender_took_is_reported_dropped() {
    for subscribed in [true, false] {
        collide(subscribed).await;
    }
}

async fn collide(subscribed: bool) {
    use alloy::network::TransactionBuilder;
    use tessera_bindings::client::ClientError;

    let env = TestEnv::start(DeployConfig::default()).await;
    let p = &env.provider;
    p.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await.unwrap();
    let heads = Heads::connect(Some(&env.chain.ws_endpoint()), Duration::from_secs(1)).await;
    let watch = if subscribed { Some(heads.watch().expect("subscribed")) } else { None };
    let sender = Sender::new(p.clone());
    let token = MockUSDC::new(env.deployment.token, p.clone());
    let sponsor = env.actors.sponsor.address();
    let (spender, other) = (env.actors.agent(0), env.actors.agent(1));
    let pending = sender.send(token.approve(spender, U256::from(7)), sponsor, watch.as_ref());
    let pending = pending.await.unwrap();
    let (nonce, first) = (pending.nonce(), pending.hash());
    let sent = p.get_transaction_by_hash(first).await.unwrap().expect("in the pool");
    assert_eq!(sent.nonce(), nonce);

    // The other sender's transaction at the same nonce, at twice the fee:
    // the node keeps it instead.
    let theirs = token
        .approve(other, U256::from(9))
        .from(sponsor)
        .into_transaction_request()
        .with_nonce(nonce)
        .with_gas_limit(sent.gas_limit())
        .with_max_fee_per_gas(sent.max_fee_per_gas() * 2)
        .with_max_priority_fee_per_gas(sent.max_priority_fee_per_gas().unwrap_or(1) * 2);
    let theirs = *p.send_transaction(theirs).await.unwrap().tx_hash();
    p.raw_request::<_, Value>("evm_setIntervalMining".into(), (1u64,)).await.unwrap();

    let result = tokio::time::timeout(Duration::from_secs(60), sender.mined(pending, watch))
        .await
        .expect("told within a minute, not after the receipt timeout");
    match result {
        Err(ClientError::Dropped { nonce: n, hashes }) => {
            assert_eq!(n, nonce);
            assert_eq!(hashes, vec![first], "the one version sent");
        }
        other => panic!("subscribed {subscribed}: expected Dropped, got {other:?}"),
    }
    let mined = p.get_transaction_receipt(theirs).await.unwrap().expect("theirs mined");
    assert!(mined.status());
    assert!(p.get_transaction_receipt(first).await.unwrap().is_none(), "ours never mined");
    assert_eq!(token.allowance(sponsor, spender).call().await.unwrap(), U256::ZERO);
    assert_eq!(token.allowance(sponsor, other).call().await.unwrap(), U256::from(9));

    // The count was forgotten: the next transaction reads the node's and
    // is mined.
    let heads_now = if subscribed { heads.watch() } else { None };
    let again = sender.send(token.approve(spender, U256::from(7)), sponsor, heads_now.as_ref());
    let again = again.await.unwrap();
    assert_eq!(again.nonce(), nonce + 1);
    let receipt = tokio::time::timeout(Duration::from_secs(60), sender.mined(again, heads_now))
        .await
        .expect("mined within a minute")
        .expect("mined");
    assert!(receipt.status());
    assert_eq!(token.allowance(sponsor, spender).call().await.unwrap(), U256::from(7));
}
