//! Driving task lifecycles on a deployed escrow and recording each step's
//! transaction, as the demo and the gas bench both do.

use alloy::{
    eips::BlockNumberOrTag,
    primitives::{Address, B256, TxHash, U256, keccak256},
    providers::{DynProvider, Provider},
    rpc::types::TransactionReceipt,
};
use serde::Serialize;
use tessera_bindings::{
    ITaskEscrow::{CreateParams, GrantedBatch},
    MockUSDC, capability,
    client::{ClientError, EscrowClient},
    deployment::Deployment,
    permit::TokenDomain,
    task::{TaskRecord, all_created_in},
};

use crate::{Error, actors::Actors};

/// One mined transaction of a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Scenario the step belongs to.
    pub scenario: String,
    /// The call, e.g. `createTaskWithPermit`.
    pub step: String,
    /// Receipt `gasUsed`.
    pub gas: u64,
    /// Transaction hash.
    pub tx: TxHash,
    /// Block it was mined in.
    pub block: u64,
}

/// Runs lifecycles against one deployment and keeps every step it mined.
#[derive(Debug)]
pub struct Driver<'a> {
    /// The provider (signs for every role).
    pub provider: DynProvider,
    /// The role accounts.
    pub actors: &'a Actors,
    /// Where the contracts are.
    pub deployment: &'a Deployment,
    /// The escrow client.
    pub escrow: EscrowClient,
    /// The token's permit domain.
    pub domain: TokenDomain,
    /// Steps mined so far.
    pub steps: Vec<Step>,
    /// The capability new tasks ask for (the escrow checks that the
    /// executor offers it); `summarize` unless changed.
    pub capability: B256,
    scenario: String,
    next_ref: u64,
}

impl<'a> Driver<'a> {
    /// A driver for `deployment`.
    pub fn new(provider: DynProvider, actors: &'a Actors, deployment: &'a Deployment) -> Self {
        Self {
            escrow: EscrowClient::new(provider.clone(), deployment.task_escrow),
            domain: TokenDomain {
                name: "USD Coin".into(),
                version: "1".into(),
                chain_id: deployment.chain_id,
                token: deployment.token,
            },
            provider,
            actors,
            deployment,
            steps: Vec::new(),
            capability: capability::encode("summarize").expect("a valid capability name"),
            scenario: String::new(),
            next_ref: 0,
        }
    }

    /// Names the scenario the following steps belong to.
    pub fn scenario(&mut self, name: impl Into<String>) {
        self.scenario = name.into();
    }

    /// Records a mined step and returns it.
    pub fn record(&mut self, step: &str, receipt: &TransactionReceipt) -> Step {
        let s = Step {
            scenario: self.scenario.clone(),
            step: step.to_owned(),
            gas: receipt.gas_used,
            tx: receipt.transaction_hash,
            block: receipt.block_number.unwrap_or_default(),
        };
        self.steps.push(s.clone());
        s
    }

    /// The latest block's timestamp (the chain's clock, which tests may move).
    pub async fn now(&self) -> Result<u64, Error> {
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Latest).await?;
        Ok(block.map(|b| b.header.timestamp).unwrap_or_default())
    }

    /// Moves the chain's clock forward and mines a block.
    pub async fn advance(&self, secs: u64) -> Result<(), Error> {
        self.provider
            .raw_request::<_, serde_json::Value>("evm_increaseTime".into(), (secs,))
            .await?;
        self.provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await?;
        Ok(())
    }

    /// Creation parameters for a fresh reference, due in a day, reviewed within an hour.
    pub async fn params(
        &mut self,
        executor: Address,
        amount: u128,
        spec_uri: String,
    ) -> Result<CreateParams, Error> {
        self.next_ref += 1;
        let now = self.now().await?;
        Ok(CreateParams {
            r#ref: keccak256(format!("{}:{}", self.scenario, self.next_ref)),
            planId: keccak256(self.scenario.as_bytes()),
            parentId: U256::ZERO,
            capability: self.capability,
            client: self.actors.client.address(),
            executor,
            amount,
            deadline: alloy::primitives::aliases::U40::from(now + 24 * 3600),
            reviewWindow: 3600,
            specURI: spec_uri,
        })
    }

    /// The sponsor creates a task with a permit (valid until the task's own deadline).
    pub async fn create_with_permit(&mut self, params: CreateParams) -> Result<TaskRecord, Error> {
        let deadline = U256::from(params.deadline);
        let (rec, receipt) = self
            .escrow
            .create_with_permit(&self.actors.sponsor, &self.domain, params, deadline)
            .await?;
        self.record("createTaskWithPermit", &receipt);
        Ok(rec)
    }

    /// The sponsor approves the escrow for `amount`, then creates the task.
    /// Both go through the escrow client's sender: one nonce source for
    /// the key (a second one, the provider's own filler, would hand out a
    /// nonce the sender has counted, or the other way round).
    pub async fn create_with_approval(
        &mut self,
        params: CreateParams,
    ) -> Result<TaskRecord, Error> {
        let sponsor = self.actors.sponsor.address();
        let usdc = MockUSDC::new(self.deployment.token, self.provider.clone());
        let approve = usdc.approve(self.deployment.task_escrow, U256::from(params.amount));
        let receipt = self.escrow.transact(approve, sponsor).await?;
        self.record("token.approve", &receipt);
        let (rec, receipt) = self.escrow.create(sponsor, params).await?;
        self.record("createTask", &receipt);
        Ok(rec)
    }

    /// The sponsor creates several tasks in one transaction with one permit
    /// for their sum (valid until the first task's deadline).
    pub async fn create_many_with_permit(
        &mut self,
        params: Vec<CreateParams>,
    ) -> Result<Vec<TaskRecord>, Error> {
        let deadline = U256::from(params.first().map(|p| p.deadline).unwrap_or_default());
        let (recs, receipt) = self
            .escrow
            .create_many_with_permit(&self.actors.sponsor, &self.domain, params, deadline)
            .await?;
        self.record("createTasksWithPermit", &receipt);
        Ok(recs)
    }

    /// `operator` creates the tasks of `batches` under their sponsors'
    /// grants (`createWithGrants`), in one transaction; the records come back
    /// in order, each funded by its grant's sponsor.
    pub async fn create_with_grants(
        &mut self,
        operator: Address,
        batches: Vec<GrantedBatch>,
    ) -> Result<Vec<TaskRecord>, Error> {
        let n: usize = batches.iter().map(|b| b.params.len()).sum();
        let call = self.escrow.contract().createWithGrants(batches);
        let receipt = self.escrow.transact(call, operator).await?;
        self.record("createWithGrants", &receipt);
        let recs = all_created_in(self.deployment.task_escrow, &receipt);
        if recs.len() != n {
            return Err(ClientError::NoTaskCreated(receipt.transaction_hash).into());
        }
        Ok(recs)
    }

    /// The executor accepts and completes in one call (`deliver`).
    pub async fn deliver_at_once(
        &mut self,
        rec: &mut TaskRecord,
        result_uri: &str,
    ) -> Result<(), Error> {
        let r = self.escrow.deliver(rec.task.executor, rec, result_uri).await?;
        self.record("deliver", &r);
        Ok(())
    }

    /// The client approves every task of `recs` in one transaction.
    pub async fn approve_many(&mut self, recs: &mut [TaskRecord]) -> Result<(), Error> {
        let r = self.escrow.approve_many(self.actors.client.address(), recs).await?;
        self.record("approvePayments", &r);
        Ok(())
    }

    /// Accept and complete with `result_uri`.
    pub async fn deliver(&mut self, rec: &mut TaskRecord, result_uri: &str) -> Result<(), Error> {
        let executor = rec.task.executor;
        let r = self.escrow.accept(executor, rec).await?;
        self.record("acceptTask", &r);
        let r = self.escrow.complete(executor, rec, result_uri).await?;
        self.record("completeTask", &r);
        Ok(())
    }

    /// Accept, complete, dispute.
    pub async fn disputed(&mut self, executor: Address, amount: u128) -> Result<TaskRecord, Error> {
        let params = self.params(executor, amount, spec_of_len(60)).await?;
        let mut rec = self.create_with_permit(params).await?;
        self.deliver(&mut rec, "data:text/plain,an unhelpful answer").await?;
        let client = self.actors.client.address();
        let r = self.escrow.dispute(client, &mut rec, "data:text/plain,off topic").await?;
        self.record("disputeTask", &r);
        Ok(rec)
    }

    /// Token balance of `who`.
    pub async fn balance(&self, who: Address) -> Result<U256, Error> {
        MockUSDC::new(self.deployment.token, &self.provider)
            .balanceOf(who)
            .call()
            .await
            .map_err(crate::contract_err("reading a balance"))
    }
}

/// A spec envelope URI of exactly `len` bytes (at least 40).
pub fn spec_of_len(len: usize) -> String {
    let head = "data:application/json,{\"parent\":\"0x01\",\"spec\":\"";
    let tail = "\"}";
    let pad = len.saturating_sub(head.len() + tail.len());
    let words = "summarize the attached article in three bullets ";
    let body: String = words.chars().cycle().take(pad).collect();
    format!("{head}{body}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_has_the_asked_length() {
        for len in [60, 600, 61, 1000] {
            assert_eq!(spec_of_len(len).len(), len);
        }
    }
}
