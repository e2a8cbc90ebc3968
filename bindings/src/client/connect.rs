//! The HTTP provider every service signs and reads through, and the
//! readiness check of its node.

use alloy::{
    network::EthereumWallet,
    providers::{DynProvider, Provider, ProviderBuilder},
};

/// An HTTP provider that signs with `wallet`: its JSON-RPC calls retried on
/// transient failures ([`crate::retry`]) and every attempt counted by method
/// ([`crate::rpc_metrics`]), over [`crate::transport::HintedHttp`] (a 429
/// waits as long as its `Retry-After` asks). A call that gets no answer in
/// [`RPC_TIMEOUT`] (or no connection in [`CONNECT_TIMEOUT`]) fails, so a
/// hung provider is a transient failure like any other.
///
/// Nonces are read from the node's pending state for every transaction: a
/// cached nonce would be consumed by a call that fails gas estimation (a
/// revert), leaving a gap that stalls every later transaction of the account.
pub fn connect(url: alloy::transports::http::reqwest::Url, wallet: EthereumWallet) -> DynProvider {
    let client = alloy::rpc::client::ClientBuilder::default()
        .layer(crate::retry::RetryLayer::default())
        .layer(crate::rpc_metrics::RpcMetricsLayer)
        .transport(
            crate::transport::HintedHttp::new(http_client(), url.clone()),
            alloy::transports::utils::guess_local_url(&url),
        );
    ProviderBuilder::new()
        .disable_recommended_fillers()
        .with_gas_estimation()
        .with_simple_nonce_management()
        .fetch_chain_id()
        .wallet(wallet)
        .connect_client(client)
        .erased()
}

/// How long a JSON-RPC call may wait for its answer.
pub const RPC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a connection to the provider may take to open.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn http_client() -> alloy::transports::http::reqwest::Client {
    alloy::transports::http::reqwest::Client::builder()
        .timeout(RPC_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        // Only a TLS backend that fails to initialise stops the builder;
        // the default client fails the same way.
        .unwrap_or_default()
}

/// A readiness check for `/readyz`: the node answers `eth_blockNumber`
/// (the error as text otherwise). Every service's chain check is this one.
pub fn chain_ready(
    provider: DynProvider,
) -> impl Fn() -> futures_util::future::BoxFuture<'static, Result<(), String>> + Send + Sync + 'static
{
    move || {
        let provider = provider.clone();
        Box::pin(
            async move { provider.get_block_number().await.map(drop).map_err(|e| e.to_string()) },
        )
    }
}
