//! Agents that hire agents, on a real chain with the real worker runtime:
//! the brief agent accepts its task before it funds the translation as a
//! child task, pays the child only for a parent that still stands and a
//! result that is a translation, keeps what it has out in child tasks under
//! its card's cap, and finds its children again from the chain after a
//! restart with an empty memory. The clients here try to drain it.

use std::sync::Arc;

use alloy::{
    network::EthereumWallet,
    primitives::{Address, B256, U256},
    providers::Provider,
    rpc::types::{Filter, Log},
    signers::local::PrivateKeySigner,
    sol_types::SolEvent,
};
use tessera_anvil::{deploy::DeployConfig, lifecycle::Driver};
use tessera_bindings::{
    AgentRegistry, MockUSDC, TaskEscrow, capability,
    client::{EscrowClient, connect},
    envelope::{Envelope, EnvelopeCodec, MemoryBlobStore, Parent},
    task::{Status, TaskRecord},
};
use tessera_e2e::{TestEnv, mined};
use tessera_workers::{
    AgentCard, TaskInput,
    runtime::{DELEGATION_MARGIN_SECS, Handled, Worker, child_of, read_result},
};

const ARTICLE: &str = "The escrow locks funds before work starts. Agents accept tasks \
and deliver results on chain. Clients approve results or dispute them. Arbiters settle \
disputes in basis points. Every step emits an event for the indexer.";

const SPEC: &str = "Brief in French, two bullets";

const BRIEF_CARD: &str = "
id: brief-e2e
description: Briefs; hires a translator, then summarizes.
role: executor
model: offline
capabilities:
  - name: brief
    price: 1200000
delegates:
  - capability: translate
    max_price: 1000000
instructions: Have it translated, then summarize.
";

/// What the brief agent starts with, for the child tasks it funds.
const WALLET: u64 = 5_000_000;

/// The demo translator's price: the cheapest translation under the limit.
const CHILD_PRICE: u128 = 800_000;

/// A chain with the brief agent (dev account 11) registered and funded.
struct Scene {
    env: TestEnv,
    blobs: Arc<MemoryBlobStore>,
    /// The brief agent.
    me: Address,
    /// The demo translator, which no worker runs unless a test spawns one:
    /// a test delivers its child tasks by hand.
    translator: Address,
    card: String,
}

impl Scene {
    async fn start(card: &str) -> (Self, Worker) {
        let env = TestEnv::start(DeployConfig::default()).await;
        let translator = env.actors.agent(demo_translator().account);
        let scene = Self {
            env,
            blobs: Arc::new(MemoryBlobStore::new()),
            me: Address::ZERO,
            translator,
            card: card.to_owned(),
        };
        let w = scene.worker();
        w.ensure_registered().await.unwrap();
        let scene = Self { me: w.address(), ..scene };
        let usdc = MockUSDC::new(scene.env.deployment.token, &scene.env.provider);
        let deployer = scene.env.actors.deployer.address();
        mined(usdc.mint(scene.me, U256::from(WALLET)).from(deployer)).await;
        (scene, w)
    }

    /// A worker for the brief agent with an empty memory (a new life).
    fn worker(&self) -> Worker {
        let card = AgentCard::from_yaml(&self.card).unwrap();
        Worker::new(
            self.provider(),
            self.signer().address(),
            card,
            self.env.deployment.clone(),
            self.blobs.clone(),
        )
    }

    fn signer(&self) -> PrivateKeySigner {
        PrivateKeySigner::from_signing_key(self.env.chain.keys()[11].clone())
    }

    /// A provider signing for the brief agent.
    fn provider(&self) -> alloy::providers::DynProvider {
        connect(self.env.chain.endpoint_url(), EthereumWallet::new(self.signer()))
    }

    fn driver(&self) -> Driver<'_> {
        let mut d = self.env.driver();
        d.scenario("delegation e2e");
        d.capability = capability::encode("brief").unwrap();
        d
    }

    /// A brief for the agent, funded by the sponsor, due in a day.
    async fn own_task(&self, d: &mut Driver<'_>) -> TaskRecord {
        let mut envelope = Envelope::new(Parent::Task("1".into()), SPEC);
        envelope.capability = Some("brief".into());
        envelope.source = Some(ARTICLE.into());
        let spec = EnvelopeCodec::default().encode(&envelope, self.blobs.as_ref()).unwrap();
        let params = d.params(self.me, 1_200_000, spec).await.unwrap();
        d.create_with_permit(params).await.unwrap()
    }

    async fn fetch(&self, id: U256) -> TaskRecord {
        let escrow = EscrowClient::new(self.env.provider.clone(), self.env.deployment.task_escrow);
        escrow.fetch(id, self.env.deployment.deploy_block).await.unwrap()
    }

    /// The translator delivers `result` (published as JSON) on child `child`.
    async fn deliver_child(&self, d: &Driver<'_>, child: U256, result: &serde_json::Value) {
        let uri = EnvelopeCodec::default()
            .publish(&serde_json::to_vec(result).unwrap(), self.blobs.as_ref())
            .unwrap();
        let mut rec = self.fetch(child).await;
        d.escrow.deliver(self.translator, &mut rec, &uri).await.unwrap();
    }

    /// The escrow's logs of task `id`, oldest first.
    async fn logs(&self, id: U256) -> Vec<Log> {
        let filter = Filter::new()
            .address(self.env.deployment.task_escrow)
            .topic1(B256::from(id))
            .from_block(self.env.deployment.deploy_block);
        self.env.provider.get_logs(&filter).await.unwrap()
    }

    async fn balance(&self, who: Address) -> U256 {
        self.env.balance(who).await
    }

    /// Past `child`'s dispute window with nobody ruling, the worker's next
    /// pass claims it back and gives up its own task `own`: the child is
    /// refunded and the agent holds `before` again.
    async fn refunded_after_the_dispute_window(
        &self,
        d: &mut Driver<'_>,
        w: &mut Worker,
        own: U256,
        child: U256,
        before: U256,
    ) {
        d.advance(u64::from(self.fetch(child).await.task.disputeWindow) + 1).await.unwrap();
        let handled = w.poll_once().await.unwrap();
        assert!(
            matches!(handled.as_slice(), [Handled::Declined { task, .. }] if *task == own),
            "{handled:?}"
        );
        assert_eq!(self.fetch(child).await.status(), Status::Refunded);
        assert_eq!(self.balance(self.me).await, before, "not drained");
    }
}

fn demo_translator() -> &'static tessera_anvil::deploy::DemoAgent {
    tessera_anvil::deploy::DEMO_AGENTS.iter().find(|a| a.id == "translator").unwrap()
}

/// A well-formed translation of the article into French, as the offline
/// translator delivers it.
fn translation() -> serde_json::Value {
    let input = TaskInput::new(SPEC).with_source(ARTICLE);
    tessera_workers::run("translate", &input).unwrap().to_json()
}

/// The one child task the first poll funded.
fn delegated(handled: &[Handled], own: U256) -> U256 {
    match handled {
        [Handled::Delegated { task, child, executor: _, price }] if *task == own => {
            assert_eq!(*price, CHILD_PRICE, "the cheapest offer");
            *child
        }
        other => panic!("one delegation of {own}: {other:?}"),
    }
}

/// What a worker's pass did to `own`'s child `child`: the status it left
/// the child in and why; panics, naming `what` was expected, when the pass
/// did not stop it.
fn child_stopped(handled: &[Handled], own: U256, child: U256, what: &str) -> (Status, String) {
    handled
        .iter()
        .find_map(|h| match h {
            Handled::ChildStopped { task, child: c, status, reason }
                if *task == own && *c == child =>
            {
                Some((*status, reason.clone()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("the child {what}: {handled:?}"))
}

/// Polls until a handled item matches, at most a minute.
async fn poll_until(w: &mut Worker, done: impl Fn(&Handled) -> bool) -> Vec<Handled> {
    let mut handled = Vec::new();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            handled.extend(w.poll_once().await.unwrap());
            if handled.iter().any(&done) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "within a minute: {handled:?}");
    handled
}

/// An agent that hires an agent: the brief worker accepts its task, and
/// only then creates the translation as a child task of its own (parent:
/// its task, same plan), paid from its wallet — so the client can no longer
/// cancel the task it is spending on. It waits for the demo translator,
/// checks and approves the translation, summarizes it and delivers its own
/// task after the child is settled. A worker restarted while it waits
/// follows the child it created instead of paying for a second one. Its
/// profit is what it earned less what it paid.
#[tokio::test]
async fn a_delegating_worker_accepts_before_funding_pays_its_child_and_delivers() {
    let (s, mut w) = Scene::start(BRIEF_CARD).await;
    let (me0, translator0) = (s.balance(s.me).await, s.balance(s.translator).await);
    let mut d = s.driver();
    let own = s.own_task(&mut d).await;

    let first = w.poll_once().await.unwrap();
    let child = delegated(&first, own.id);
    assert_eq!(child, child_of(s.me, own.id, "translate").0, "derived from the task");
    // Accepted, then funded: the own task's acceptance comes before the
    // child's creation on chain.
    let mut own_rec = s.fetch(own.id).await;
    assert_eq!(own_rec.status(), Status::Accepted);
    let accepted = s
        .logs(own.id)
        .await
        .into_iter()
        .find(|l| l.topic0() == Some(&TaskEscrow::TaskAccepted::SIGNATURE_HASH));
    let accepted = accepted.expect("the own task was accepted");
    let created = s.logs(child).await.into_iter().next().expect("the child was created");
    assert_eq!(created.topic0(), Some(&TaskEscrow::TaskCreated::SIGNATURE_HASH));
    let at = |l: &Log| (l.block_number.unwrap(), l.log_index.unwrap());
    assert!(
        at(&accepted) < at(&created),
        "accepted {:?}, funded {:?}",
        at(&accepted),
        at(&created)
    );
    // The client can no longer withdraw the task the agent is spending on.
    let client = s.env.actors.client.address();
    let refused = d.escrow.cancel(client, &mut own_rec).await.unwrap_err();
    assert!(refused.to_string().contains("TaskEscrowInvalidStatus"), "{refused}");
    let child_rec = s.fetch(child).await;
    let due = own.task.deadline.to::<u64>() - DELEGATION_MARGIN_SECS;
    assert_eq!(child_rec.task.deadline.to::<u64>(), due, "due before the own task");

    // Restarted while it waits: the new life follows the same child.
    drop(w);
    let mut w = s.worker();
    let again = w.poll_once().await.unwrap();
    assert!(
        matches!(again.as_slice(), [Handled::Delegated { child: c, .. }] if *c == child),
        "the same child, not a second one: {again:?}"
    );
    // Now the translator comes up and takes the child task.
    let shared: tessera_stack::Blobs = s.blobs.clone();
    let _translating = tessera_stack::spawn_worker(
        &s.env.chain.endpoints(),
        &s.env.actors,
        &s.env.deployment,
        demo_translator(),
        shared,
    )
    .await
    .unwrap();
    poll_until(&mut w, |h| matches!(h, Handled::Delivered { .. })).await;

    let child_rec = s.fetch(child).await;
    assert_eq!(child_rec.status(), Status::Paid);
    assert_eq!((child_rec.parent_id, child_rec.plan_id), (own.id, own.plan_id), "lineage");
    assert_eq!(child_rec.task.funder, s.me, "paid from the agent's own wallet");
    let mut own_rec = s.fetch(own.id).await;
    assert_eq!(own_rec.status(), Status::Completed);
    let result = read_result(own_rec.result_uri.as_deref().unwrap(), s.blobs.as_ref()).unwrap();
    assert_eq!(result["capability"], "brief", "{result}");
    assert_eq!(result["delegated"]["task"], child.to_string(), "{result}");
    assert_eq!(result["delegated"]["paid"], "800000", "{result}");
    let translated = result["translation"].as_str().unwrap();
    assert!(!translated.is_empty() && !ARTICLE.contains(translated), "{result}");
    for bullet in result["summary"]["bullets"].as_array().unwrap() {
        assert!(translated.contains(bullet.as_str().unwrap()), "{result}");
    }
    // The child was settled before the own task was delivered.
    let settled = s.logs(child).await.last().unwrap().block_number.unwrap();
    let delivered = s.logs(own.id).await.last().unwrap().block_number.unwrap();
    assert!(settled < delivered, "child settled in {settled}, own delivered in {delivered}");

    // Paid once for the child; once the client approves, the agent's
    // profit is its price less the child's.
    assert_eq!(s.balance(s.translator).await - translator0, U256::from(CHILD_PRICE));
    assert_eq!(me0 - s.balance(s.me).await, U256::from(CHILD_PRICE), "one child paid");
    d.escrow.approve(client, &mut own_rec).await.unwrap();
    assert_eq!(s.balance(s.me).await - me0, U256::from(400_000), "profit 0.4 USDC");
}

/// The client lets the accepted task run out and hands it to another agent
/// while the agent is down, after the child delivered: the restarted agent,
/// with nothing in memory, finds its child on chain and disputes it — the
/// parent was withdrawn — instead of paying for nothing, then claims the
/// default refund once the arbiter's window passed. The agent ends where
/// it started; the translator is paid nothing.
#[tokio::test]
async fn a_restarted_worker_disputes_the_child_of_a_parent_taken_away_and_is_refunded() {
    let (s, mut w) = Scene::start(BRIEF_CARD).await;
    let (me0, translator0) = (s.balance(s.me).await, s.balance(s.translator).await);
    let mut d = s.driver();
    let own = s.own_task(&mut d).await;
    let child = delegated(&w.poll_once().await.unwrap(), own.id);
    drop(w);

    // The translation comes in just before the child's deadline...
    let deadline = own.task.deadline.to::<u64>();
    d.advance(deadline - d.now().await.unwrap() - DELEGATION_MARGIN_SECS - 60).await.unwrap();
    s.deliver_child(&d, child, &translation()).await;
    // ...and the own task runs out: its client hands it to another agent.
    d.advance(DELEGATION_MARGIN_SECS + 120).await.unwrap();
    let other = s.env.actors.agent(0);
    let brief = capability::encode("brief").unwrap();
    let registry = AgentRegistry::new(s.env.deployment.agent_registry, &s.env.provider);
    mined(registry.addCapability(brief, 1_000_000).from(other)).await;
    let mut own_rec = s.fetch(own.id).await;
    let later = d.now().await.unwrap() + 3600;
    d.escrow
        .reassign(s.env.actors.client.address(), &mut own_rec, other, later, brief)
        .await
        .unwrap();

    let mut w = s.worker();
    let handled = w.poll_once().await.unwrap();
    let (status, reason) = child_stopped(&handled, own.id, child, "disputed");
    assert_eq!(status, Status::Disputed);
    assert!(reason.contains("was withdrawn") && reason.contains("reassigned"), "{reason}");
    assert_eq!(s.fetch(child).await.status(), Status::Disputed, "not paid");
    assert!(w.poll_once().await.unwrap().is_empty(), "disputed once, followed quietly");

    // Nobody rules: past the dispute window the agent claims its money back.
    s.refunded_after_the_dispute_window(&mut d, &mut w, own.id, child, me0).await;
    assert_eq!(s.balance(s.translator).await, translator0);
}

/// The child delivers something that is not the translation bought (a
/// translation into Spanish for a French brief): the agent disputes it with
/// the reason, on chain for the arbiter, pays nothing, and claims its money
/// back once the arbiter's window passed unruled.
#[tokio::test]
async fn a_child_that_delivers_a_malformed_result_is_disputed_not_paid() {
    let (s, mut w) = Scene::start(BRIEF_CARD).await;
    let (me0, translator0) = (s.balance(s.me).await, s.balance(s.translator).await);
    let mut d = s.driver();
    let own = s.own_task(&mut d).await;
    let child = delegated(&w.poll_once().await.unwrap(), own.id);
    let mut spanish = translation();
    spanish["target_language"] = "es".into();
    s.deliver_child(&d, child, &spanish).await;

    let handled = w.poll_once().await.unwrap();
    let [Handled::ChildStopped { task, child: c, status, reason }] = handled.as_slice() else {
        panic!("the child disputed: {handled:?}")
    };
    assert_eq!((*task, *c, *status), (own.id, child, Status::Disputed));
    assert!(reason.starts_with("the translate result is malformed"), "{reason}");
    assert!(reason.contains("the spec asks for \"fr\""), "{reason}");
    assert_eq!(s.fetch(child).await.status(), Status::Disputed, "not paid");
    assert_eq!(s.balance(s.translator).await, translator0, "nothing for the translator");
    assert_eq!(s.fetch(own.id).await.status(), Status::Accepted, "nothing delivered on it");
    // The reason is on chain for the arbiter.
    let disputed = s.logs(child).await.into_iter().find_map(|l| {
        TaskEscrow::TaskDisputed::decode_log(&l.inner).ok().map(|e| e.data.reasonURI)
    });
    let why = read_result(&disputed.expect("a dispute log"), s.blobs.as_ref()).unwrap();
    assert_eq!(why["reason"], reason.as_str());

    // Nobody rules: past the dispute window the agent claims its money back.
    s.refunded_after_the_dispute_window(&mut d, &mut w, own.id, child, me0).await;
}

/// Nobody delivers the translation: past the child's deadline (two minutes
/// before its own) the agent takes the child's money back and declines its
/// own task on chain at once, saying why — its client is refunded without
/// waiting for the deadline, and the agent ends where it started.
#[tokio::test]
async fn a_child_that_expires_is_refunded_and_the_own_task_declined_on_chain() {
    let (s, mut w) = Scene::start(BRIEF_CARD).await;
    let me0 = s.balance(s.me).await;
    let mut d = s.driver();
    let own = s.own_task(&mut d).await;
    let child = delegated(&w.poll_once().await.unwrap(), own.id);
    let funds = s.balance(own.task.funder).await;
    let due = s.fetch(child).await.task.deadline.to::<u64>();
    d.advance(due - d.now().await.unwrap() + 1).await.unwrap();

    let handled = w.poll_once().await.unwrap();
    let [Handled::DeclinedOnChain { task, reason, reason_uri }] = handled.as_slice() else {
        panic!("the own task declined on chain: {handled:?}")
    };
    assert_eq!((*task, reason.as_str()), (own.id, "the delegated translate expired"));
    assert_eq!(read_result(reason_uri, s.blobs.as_ref()).unwrap()["reason"], reason.as_str());
    assert_eq!(s.fetch(child).await.status(), Status::Expired);
    assert_eq!(s.fetch(own.id).await.status(), Status::Declined);
    assert!(d.now().await.unwrap() < own.task.deadline.to::<u64>(), "before its deadline");
    assert_eq!(s.balance(own.task.funder).await - funds, U256::from(1_200_000u64));
    assert_eq!(s.balance(s.me).await, me0, "the child's money back");
    assert!(w.poll_once().await.unwrap().is_empty(), "nothing left to follow");
}

/// The card caps what the agent has out in child tasks at 1.5 USDC: with
/// one 0.8 USDC translation out, a second brief is declined, untouched and
/// unfunded, saying why. A restarted agent counts the child it funded in
/// its earlier life (found on chain) and declines it again; once that child
/// is settled the brief is looked at again and delegated.
#[tokio::test]
async fn the_cap_refuses_a_second_child_and_a_restarted_worker_still_counts_the_first() {
    let card = format!("{BRIEF_CARD}max_delegated_outstanding: \"1.5\"\n");
    let (s, mut w) = Scene::start(&card).await;
    let mut d = s.driver();
    let first = s.own_task(&mut d).await;
    let child = delegated(&w.poll_once().await.unwrap(), first.id);
    let second = s.own_task(&mut d).await;
    let over_cap = |handled: &[Handled]| {
        handled.iter().any(|h| {
            matches!(h, Handled::Declined { task, reason } if *task == second.id
                && reason.contains("800000 base units with 800000 out in child tasks already")
                && reason.contains("max_delegated_outstanding of 1500000"))
        })
    };
    let handled = w.poll_once().await.unwrap();
    assert!(over_cap(&handled), "{handled:?}");
    let (second_child, _) = child_of(s.me, second.id, "translate");
    let escrow = TaskEscrow::new(s.env.deployment.task_escrow, &s.env.provider);
    let unfunded = || async { escrow.taskHash(second_child).call().await.unwrap().is_zero() };
    assert!(unfunded().await, "no second child");
    assert_eq!(s.fetch(second.id).await.status(), Status::Created, "left for the client");

    // A new life with an empty memory finds the first child on chain.
    drop(w);
    let mut w = s.worker();
    let handled = w.poll_once().await.unwrap();
    assert!(
        handled.iter().any(|h| matches!(h, Handled::Delegated { task, child: c, .. }
            if *task == first.id && *c == child)),
        "{handled:?}"
    );
    assert!(over_cap(&handled), "the first child still counts: {handled:?}");
    assert!(unfunded().await, "still no second child");

    // The first child delivers and is paid: room for the second.
    s.deliver_child(&d, child, &translation()).await;
    let handled =
        poll_until(&mut w, |h| matches!(h, Handled::Delegated { task, .. } if *task == second.id))
            .await;
    assert!(
        handled.iter().any(|h| matches!(h, Handled::Delivered { task, .. } if *task == first.id)),
        "{handled:?}"
    );
    assert_eq!(s.fetch(child).await.status(), Status::Paid);
    assert_eq!(s.fetch(second.id).await.status(), Status::Accepted);
    assert!(!unfunded().await, "the second child funded once the first settled");
}

/// A child funded before its parent was accepted (as an earlier version of
/// the agent did), whose parent the client then cancelled: a worker that
/// finds it on chain cancels it rather than ever paying it, and the agent
/// has its money back.
#[tokio::test]
async fn the_child_of_a_cancelled_parent_is_cancelled_not_paid() {
    let (s, w) = Scene::start(BRIEF_CARD).await;
    drop(w);
    let me0 = s.balance(s.me).await;
    let mut d = s.driver();
    let own = s.own_task(&mut d).await;
    // Funded first, the parent still open to cancelling.
    let (child, reference) = child_of(s.me, own.id, "translate");
    let usdc = MockUSDC::new(s.env.deployment.token, s.provider());
    mined(usdc.approve(s.env.deployment.task_escrow, U256::from(CHILD_PRICE)).from(s.me)).await;
    let mut envelope = Envelope::new(Parent::Task(own.id.to_string()), SPEC);
    envelope.capability = Some("translate".into());
    envelope.source = Some(ARTICLE.into());
    let spec = EnvelopeCodec::default().encode(&envelope, s.blobs.as_ref()).unwrap();
    let params = tessera_bindings::ITaskEscrow::CreateParams {
        r#ref: reference,
        planId: own.plan_id,
        parentId: own.id,
        capability: capability::encode("translate").unwrap(),
        client: s.me,
        executor: s.translator,
        amount: CHILD_PRICE,
        deadline: alloy::primitives::aliases::U40::from(
            own.task.deadline.to::<u64>() - DELEGATION_MARGIN_SECS,
        ),
        reviewWindow: own.task.reviewWindow,
        specURI: spec,
    };
    let funded = EscrowClient::new(s.provider(), s.env.deployment.task_escrow);
    let (created, _) = funded.create(s.me, params).await.unwrap();
    assert_eq!(created.id, child);
    let mut own_rec = s.fetch(own.id).await;
    d.escrow.cancel(s.env.actors.client.address(), &mut own_rec).await.unwrap();
    assert_eq!(s.balance(s.me).await, me0 - U256::from(CHILD_PRICE), "in escrow");

    let mut w = s.worker();
    let handled = w.poll_once().await.unwrap();
    let (status, reason) = child_stopped(&handled, own.id, child, "cancelled");
    assert_eq!(status, Status::Cancelled);
    assert!(reason.contains("was withdrawn: it is Cancelled"), "{reason}");
    assert_eq!(s.fetch(child).await.status(), Status::Cancelled);
    assert_eq!(s.balance(s.me).await, me0, "refunded in full");
    assert!(w.poll_once().await.unwrap().is_empty(), "settled, no longer followed");
}
