//! The schema's types: the query root and every object it answers, each
//! over the store's typed rows.

use std::sync::Arc;

use async_graphql::{Context, Error, InputObject, Json, Object, Result, SimpleObject};
use serde_json::Value;
use tessera_bindings::{catalogue::Entry, envelope::uri_hash};

use super::{DEFAULT_PAGE, Index, MAX_PAGE, db_error};
use crate::{
    params,
    store::{
        AgentView, PlanTree, TaskQuery, TaskView,
        graph::{DisputeEvent, PlacedDisputeEvent},
    },
};

/// A page size checked: 1..=[`MAX_PAGE`], [`DEFAULT_PAGE`] when unnamed.
fn page(first: Option<i32>) -> Result<i64> {
    let first = i64::from(first.unwrap_or(DEFAULT_PAGE));
    params::page_size("first:", first, i64::from(MAX_PAGE))
        .map_err(|e| Error::new(format!("{e}, the page limit")))
}

/// The complexity of a page of `first` items each costing `child`.
fn page_cost(first: Option<i32>, child: usize) -> usize {
    let n = first.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as usize;
    n.saturating_mul(child.max(1))
}

fn index<'a>(ctx: &Context<'a>) -> Result<&'a Index> {
    ctx.data::<Index>()
}

/// A document behind a URI (a task's envelope or result, a reason, a
/// rationale, an agent card), decoded when it is inline (`data:`, base64
/// or percent-encoded, any media type): its JSON when it is JSON, else its
/// text. Content-addressed URIs (`sha256:` blobs) are given with their
/// hash, undecoded. Read by the same reader as the REST answers
/// ([`crate::content::read`]).
#[derive(Debug, Clone, PartialEq, SimpleObject)]
pub struct Document {
    /// The URI as on chain.
    pub uri: String,
    /// keccak256 of the URI (0x hex): what the escrow stores as the spec's
    /// or the result's hash.
    pub hash: String,
    /// The decoded JSON, when the URI is `data:` and holds JSON.
    pub json: Option<Json<Value>>,
    /// The decoded text, when the URI is `data:` and holds anything else.
    pub text: Option<String>,
    /// Why nothing was decoded, when nothing was.
    pub error: Option<String>,
}

impl Document {
    /// `uri` decoded as the type says.
    pub fn of(uri: &str) -> Self {
        let (json, text, error) = match crate::content::read(uri, None) {
            Ok(crate::content::Content::Json(v)) => (Some(Json(v)), None, None),
            Ok(crate::content::Content::Text(t)) => (None, Some(t), None),
            Err(e) => (None, None, Some(e)),
        };
        Self { uri: uri.to_owned(), hash: uri_hash(uri).to_string(), json, text, error }
    }
}

/// Page information of a connection.
#[derive(Debug, Clone, PartialEq, Eq, SimpleObject)]
pub struct PageInfo {
    /// Whether a next page exists.
    pub has_next_page: bool,
    /// The cursor to pass as `after` for the next page.
    pub end_cursor: Option<String>,
}

/// A task of the index.
#[derive(Debug, Clone)]
pub struct Task(pub TaskView);

/// One checked transition of a task.
#[derive(Debug, Clone, SimpleObject)]
pub struct Transition {
    /// Block.
    pub block: u64,
    /// Log index.
    pub log_index: u64,
    /// Event name.
    pub event: String,
    /// Status before.
    pub from: String,
    /// Status after (unchanged when refused).
    pub to: String,
    /// Whether the state machine allows it.
    pub valid: bool,
    /// Why not, when not.
    pub problem: Option<String>,
}

/// A transaction that emitted one of a task's events.
#[derive(Debug, Clone, SimpleObject)]
pub struct Transaction {
    /// Block.
    pub block: i64,
    /// Event name.
    pub event: String,
    /// Transaction hash (0x hex).
    pub tx_hash: String,
}

#[Object]
impl Task {
    /// Task id (decimal).
    async fn id(&self) -> &str {
        &self.0.task_id
    }
    /// Plan id (0x hex).
    async fn plan_id(&self) -> &str {
        &self.0.plan_id
    }
    /// Parent task id (decimal; `0` for a root).
    async fn parent_id(&self) -> &str {
        &self.0.parent_id
    }
    /// Who paid the escrow.
    async fn funder(&self) -> &str {
        &self.0.funder
    }
    /// Who approves, disputes, cancels.
    async fn client(&self) -> &str {
        &self.0.client
    }
    /// The agent assigned.
    async fn executor(&self) -> &str {
        &self.0.executor
    }
    /// Amount escrowed, USDC base units.
    async fn amount(&self) -> String {
        self.0.amount.base_units().to_string()
    }
    /// Status name (`Created`, `Paid`, …).
    async fn status(&self) -> &str {
        &self.0.status
    }
    /// Capability, from the envelope.
    async fn capability(&self) -> Option<&str> {
        self.0.capability.as_deref()
    }
    /// The instruction, from the envelope.
    async fn spec(&self) -> Option<&str> {
        self.0.spec.as_deref()
    }
    /// The spec envelope, decoded, with its hash.
    async fn envelope(&self) -> Document {
        Document::of(&self.0.spec_uri)
    }
    /// The delivered result, decoded, with its hash.
    async fn result(&self) -> Option<Document> {
        self.0.result_uri.as_deref().map(Document::of)
    }
    /// Its step in its (possibly nested) plan, such as `1.1.0`.
    async fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }
    /// Labels of the nested plans enclosing it, outermost first.
    async fn groups(&self) -> &[String] {
        &self.0.groups
    }
    /// Why the envelope could not be read, when it could not.
    async fn envelope_error(&self) -> Option<&str> {
        self.0.envelope_error.as_deref()
    }
    /// An impossible transition seen, if any.
    async fn flagged(&self) -> Option<&str> {
        self.0.flagged.as_deref()
    }
    /// Block of creation.
    async fn created_block(&self) -> u64 {
        self.0.created_block
    }
    /// Block of the last change.
    async fn updated_block(&self) -> u64 {
        self.0.updated_block
    }
    /// Chain time of creation.
    async fn created_at(&self) -> u64 {
        self.0.created_at
    }
    /// Chain time of acceptance.
    async fn accepted_at(&self) -> Option<u64> {
        self.0.accepted_at
    }
    /// Chain time of delivery.
    async fn completed_at(&self) -> Option<u64> {
        self.0.completed_at
    }
    /// Chain time of settlement.
    async fn settled_at(&self) -> Option<u64> {
        self.0.settled_at
    }
    /// Whether it was ever disputed.
    async fn disputed(&self) -> bool {
        self.0.disputed
    }
    /// What the executor received at settlement, base units.
    async fn executor_paid(&self) -> String {
        self.0.executor_paid.base_units().to_string()
    }
    /// The executor's decline, with its reason, when it declined.
    async fn decline_reason(&self) -> Option<Document> {
        self.0.decline_reason_uri.as_deref().map(Document::of)
    }
    /// The executor declined late (counted as expired).
    async fn late_decline(&self) -> bool {
        self.0.late_decline
    }
    /// The client's rating of the work in its approval (0 to 100 percent);
    /// null unless it settled by approval. Its funder's record counts the
    /// task `rating/100` completed and the rest failed.
    async fn rating(&self) -> Option<i32> {
        self.0.rating.map(i32::from)
    }
    /// Its checked transitions, in chain order.
    #[graphql(complexity = 10)]
    async fn history(&self, ctx: &Context<'_>) -> Result<Vec<Transition>> {
        let detail = index(ctx)?.store.task(&self.0.task_id).await.map_err(db_error)?;
        Ok(detail
            .map(|d| {
                d.history
                    .into_iter()
                    .map(|h| Transition {
                        block: h.block,
                        log_index: h.log_index,
                        event: h.event,
                        from: h.from,
                        to: h.to,
                        valid: h.valid,
                        problem: h.problem,
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
    /// The transactions of its first events.
    #[graphql(complexity = 10)]
    async fn transactions(&self, ctx: &Context<'_>) -> Result<Vec<Transaction>> {
        let detail = index(ctx)?.store.task(&self.0.task_id).await.map_err(db_error)?;
        Ok(detail
            .map(|d| {
                d.transactions
                    .into_iter()
                    .map(|t| Transaction { block: t.block, event: t.event, tx_hash: t.tx_hash })
                    .collect()
            })
            .unwrap_or_default())
    }
    /// Its parent task, when it has one indexed.
    #[graphql(complexity = "5 + child_complexity")]
    async fn parent(&self, ctx: &Context<'_>) -> Result<Option<Task>> {
        if self.0.parent_id == "0" {
            return Ok(None);
        }
        let t = index(ctx)?.store.task(&self.0.parent_id).await.map_err(db_error)?;
        Ok(t.map(|d| Task(d.task)))
    }
    /// The tasks naming it as parent, one page.
    #[graphql(complexity = "5 + super::types::page_cost(first, child_complexity)")]
    async fn children(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<TaskConnection> {
        let filter = TaskFilter { parent: Some(self.0.task_id.clone()), ..TaskFilter::default() };
        task_page(index(ctx)?, filter, first, after).await
    }
    /// Its dispute, when it was disputed.
    #[graphql(complexity = "10 + child_complexity")]
    async fn dispute(&self, ctx: &Context<'_>) -> Result<Option<Dispute>> {
        if !self.0.disputed {
            return Ok(None);
        }
        let events = index(ctx)?.store.dispute_events(&self.0.task_id).await.map_err(db_error)?;
        Ok(Some(Dispute::of(self.0.clone(), events)))
    }
}

/// Filters of a task list; every one given must hold.
#[derive(Debug, Clone, Default, InputObject)]
pub struct TaskFilter {
    /// Any of these statuses.
    pub status: Option<Vec<String>>,
    /// Executor address.
    pub executor: Option<String>,
    /// Client address.
    pub client: Option<String>,
    /// Funder address.
    pub funder: Option<String>,
    /// Plan id (0x + 64 hex).
    pub plan: Option<String>,
    /// Parent task id (decimal; `0` for roots).
    pub parent: Option<String>,
    /// Capability name.
    pub capability: Option<String>,
    /// Created at or after this block.
    pub created_block_from: Option<u64>,
    /// Created at or before this block.
    pub created_block_to: Option<u64>,
    /// Created at or after this chain time (seconds).
    pub created_at_from: Option<u64>,
    /// Created at or before this chain time (seconds).
    pub created_at_to: Option<u64>,
    /// Ever disputed (or never).
    pub disputed: Option<bool>,
    /// Approved with a rating below this (percent); an unrated task never
    /// matches.
    pub rating_below: Option<u64>,
}

impl TaskFilter {
    /// The store's query of this filter, checked ([`params`]).
    fn query(self, after: Option<String>, limit: i64) -> Result<TaskQuery> {
        let after = after.filter(|a| !a.is_empty());
        if let Some(a) = &after {
            params::task_id(a).map_err(|_| Error::new(format!("after: {a:?} is not a cursor")))?;
        }
        if let Some(p) = &self.parent {
            params::task_id(p)?;
        }
        let address = |what, a: Option<String>| a.map(|a| params::address(what, &a)).transpose();
        let count = |v: Option<u64>| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        Ok(TaskQuery {
            status: params::statuses(self.status.unwrap_or_default())?,
            executor: address("executor", self.executor)?,
            client: address("client", self.client)?,
            funder: address("funder", self.funder)?,
            plan: self.plan.as_deref().map(params::plan_id).transpose()?,
            parent: self.parent,
            capability: self.capability,
            created_block_from: count(self.created_block_from),
            created_block_to: count(self.created_block_to),
            created_at_from: count(self.created_at_from),
            created_at_to: count(self.created_at_to),
            changed_since_block: None,
            disputed: self.disputed,
            rating_below: count(self.rating_below),
            after,
            limit,
        })
    }
}

async fn task_page(
    index: &Index,
    filter: TaskFilter,
    first: Option<i32>,
    after: Option<String>,
) -> Result<TaskConnection> {
    let q = filter.query(after, page(first)?)?;
    let (tasks, next) = index.store.task_page(&q).await.map_err(db_error)?;
    Ok(TaskConnection {
        nodes: tasks.into_iter().map(Task).collect(),
        page_info: PageInfo { has_next_page: next.is_some(), end_cursor: next },
    })
}

/// A page of tasks.
#[derive(Debug)]
pub struct TaskConnection {
    nodes: Vec<Task>,
    page_info: PageInfo,
}

/// A task with its cursor.
#[derive(Debug, Clone, SimpleObject)]
pub struct TaskEdge {
    /// The cursor to continue after this task.
    pub cursor: String,
    /// The task.
    pub node: Task,
}

#[Object]
impl TaskConnection {
    /// The tasks, by id.
    async fn nodes(&self) -> &[Task] {
        &self.nodes
    }
    /// The tasks with their cursors.
    async fn edges(&self) -> Vec<TaskEdge> {
        self.nodes
            .iter()
            .map(|t| TaskEdge { cursor: t.0.task_id.clone(), node: t.clone() })
            .collect()
    }
    /// Where the page ends.
    async fn page_info(&self) -> &PageInfo {
        &self.page_info
    }
}

/// A plan's lineage: its tree (the sponsor's tasks and, under each, those
/// its executor funded), its nested plans, and the foreign tasks naming it.
#[derive(Debug)]
pub struct Plan(Arc<PlanTree>);

/// A task in a plan's tree.
#[derive(Debug, Clone)]
pub struct PlanNode {
    tree: Arc<PlanTree>,
    at: usize,
}

impl PlanNode {
    fn node(&self) -> &crate::store::TreeNode {
        &self.tree.tasks[self.at]
    }
}

#[Object]
impl PlanNode {
    /// The task.
    async fn task(&self) -> Task {
        Task(self.node().task.clone())
    }
    /// Depth under the plan; null when detached.
    async fn depth(&self) -> Option<i64> {
        self.node().depth
    }
    /// Its parent is not indexed (yet).
    async fn pending_parent(&self) -> bool {
        self.node().pending_parent
    }
    /// In or under a parent cycle, or deeper than the walk goes.
    async fn detached(&self) -> bool {
        self.node().detached
    }
    /// Its amount and its descendants', base units.
    async fn subtree_cost(&self) -> String {
        self.node().subtree_cost.base_units().to_string()
    }
    /// Upstream tasks its envelope names as inputs.
    async fn inputs(&self) -> &[String] {
        &self.node().inputs
    }
    /// It depends on two or more tasks (a merge).
    async fn merge(&self) -> bool {
        self.node().merge
    }
    /// The tree's tasks naming it as parent.
    #[graphql(complexity = "1 + 2 * child_complexity")]
    async fn children(&self) -> Vec<PlanNode> {
        let id = &self.node().task.task_id;
        (0..self.tree.tasks.len())
            .filter(|&i| self.tree.tasks[i].task.parent_id == *id && i != self.at)
            .map(|at| PlanNode { tree: Arc::clone(&self.tree), at })
            .collect()
    }
}

/// A nested plan: the tasks sharing a run of group labels.
#[derive(Debug, Clone, SimpleObject)]
pub struct NestedPlan {
    /// Its label (the innermost of `groups`).
    pub label: String,
    /// The labels enclosing it and its own, outermost first.
    pub groups: Vec<String>,
    /// Its tasks (and those of plans nested in it), in tree order.
    pub task_ids: Vec<String>,
    /// Their amounts, base units.
    pub cost: String,
}

#[Object]
impl Plan {
    /// Plan id (lower case).
    async fn id(&self) -> &str {
        &self.0.plan_id
    }
    /// The address whose tasks make the plan.
    async fn sponsor(&self) -> Option<&str> {
        self.0.sponsor.as_deref()
    }
    /// Every task of the tree, by depth, then creation; detached last.
    #[graphql(complexity = "20 * child_complexity")]
    async fn tasks(&self) -> Vec<PlanNode> {
        (0..self.0.tasks.len()).map(|at| PlanNode { tree: Arc::clone(&self.0), at }).collect()
    }
    /// The tree's roots (depth 0), to walk down by `children`.
    #[graphql(complexity = "5 * child_complexity")]
    async fn roots(&self) -> Vec<PlanNode> {
        (0..self.0.tasks.len())
            .filter(|&at| self.0.tasks[at].depth == Some(0))
            .map(|at| PlanNode { tree: Arc::clone(&self.0), at })
            .collect()
    }
    /// The plan's cost: the amounts of all its tree's tasks, base units.
    async fn cost(&self) -> String {
        self.0.tasks.iter().map(|n| n.task.amount.base_units()).sum::<u128>().to_string()
    }
    /// More tasks than a lineage answer lists.
    async fn truncated(&self) -> bool {
        self.0.truncated
    }
    /// The nested plans, by their runs of group labels, outermost first.
    async fn nested_plans(&self) -> Vec<NestedPlan> {
        let mut out: Vec<NestedPlan> = Vec::new();
        for n in &self.0.tasks {
            for depth in 1..=n.task.groups.len() {
                let groups = &n.task.groups[..depth];
                let at = match out.iter().position(|p| p.groups == groups) {
                    Some(at) => at,
                    None => {
                        out.push(NestedPlan {
                            label: groups[depth - 1].clone(),
                            groups: groups.to_vec(),
                            task_ids: Vec::new(),
                            cost: "0".into(),
                        });
                        out.len() - 1
                    }
                };
                let p = &mut out[at];
                p.task_ids.push(n.task.task_id.clone());
                let cost = p.cost.parse::<u128>().unwrap_or(0) + n.task.amount.base_units();
                p.cost = cost.to_string();
            }
        }
        out.sort_by(|a, b| a.groups.cmp(&b.groups));
        out
    }
    /// Tasks naming the plan, or one of its tasks, funded by someone else.
    #[graphql(complexity = "10 * child_complexity")]
    async fn foreign(&self) -> Vec<Task> {
        self.0.foreign.iter().cloned().map(Task).collect()
    }
    /// More foreign tasks than are listed.
    async fn foreign_truncated(&self) -> bool {
        self.0.foreign_truncated
    }
}

/// An agent's record over its tasks.
#[derive(Debug, Clone, SimpleObject)]
pub struct AgentRecord {
    /// Tasks it executes or executed.
    pub tasks: i64,
    /// Paid or split.
    pub completed: i64,
    /// Ever disputed.
    pub disputed: i64,
    /// Refunded in full after a dispute.
    pub refunded: i64,
    /// Expired, or declined late.
    pub expired: i64,
    /// Declined in time.
    pub declined: i64,
    /// Everything it was paid, base units.
    pub earnings: String,
    /// Median seconds from creation to acceptance.
    pub median_accept_secs: Option<i64>,
    /// Median seconds from acceptance to delivery.
    pub median_completion_secs: Option<i64>,
    /// Completed over settled, when any settled.
    pub success_rate: Option<f64>,
    /// Chain seconds of its latest sign of life as an executor.
    pub last_active_at: Option<i64>,
}

/// An agent's record weighed by the money and the distinct funders behind
/// it: what the executor choice scores.
#[derive(Debug, Clone, SimpleObject)]
pub struct Weight {
    /// Weighted completed tasks.
    pub completed: f64,
    /// Weighted failed tasks.
    pub failed: f64,
    /// Weighted tasks in all.
    pub settled: f64,
    /// Funders whose tasks count.
    pub funders: u64,
    /// Of those, funders the agent itself paid.
    pub linked_funders: u64,
    /// Settled tasks below the evidence floor (counting for nothing).
    pub below_floor: u64,
}

/// An agent's ERC-8004 identity.
#[derive(Debug, Clone, SimpleObject)]
pub struct Identity {
    /// The identity's agent id (decimal).
    pub agent_id: String,
    /// Block of the link.
    pub linked_block: i64,
    /// Transaction of the link.
    pub tx: String,
}

/// One ERC-8004 feedback entry, matched against the escrow's settlements.
#[derive(Debug, Clone, SimpleObject)]
pub struct FeedbackEntry {
    /// Who gave it.
    pub client: String,
    /// Its index among that client's feedback.
    pub index: u64,
    /// Its value (decimal, scaled by `valueDecimals`).
    pub value: String,
    /// Decimals of `value`.
    pub value_decimals: u8,
    /// Its document, decoded.
    pub document: Document,
    /// The task it is about, when it matched one.
    pub task_id: Option<String>,
    /// Whether it matched a settled task of the giver's.
    pub matched: bool,
    /// Why not, when not.
    pub why: Option<String>,
    /// Revoked by its giver.
    pub revoked: bool,
    /// Block.
    pub block: i64,
}

/// ERC-8004 feedback on an agent's identity.
#[derive(Debug, Clone, SimpleObject)]
pub struct Feedback {
    /// Entries in all.
    pub count: u64,
    /// Entries matched against settlements.
    pub matched: u64,
    /// Average value of the matched entries.
    pub average: Option<f64>,
    /// The latest entries.
    pub latest: Vec<FeedbackEntry>,
}

/// One capability an agent offers, with its price.
#[derive(Debug, Clone, SimpleObject)]
pub struct Offer {
    /// Capability name.
    pub capability: String,
    /// Price, base units.
    pub price: String,
}

/// An agent of the registry.
#[derive(Debug)]
pub struct Agent(AgentView);

#[Object]
impl Agent {
    /// Address.
    async fn address(&self) -> &str {
        &self.0.agent
    }
    /// `active`, `paused` or `left`.
    async fn status(&self) -> &str {
        self.0.status.as_str()
    }
    /// Its card's id, when its metadata holds a valid card.
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    /// Its card, decoded, with its hash.
    async fn card(&self) -> Document {
        Document::of(&self.0.metadata_uri)
    }
    /// What it offers on chain, by capability.
    async fn offers(&self) -> Vec<Offer> {
        self.0
            .offers
            .iter()
            .flatten()
            .map(|(c, p)| Offer { capability: c.clone(), price: p.clone() })
            .collect()
    }
    /// Block of registration.
    async fn registered_block(&self) -> i64 {
        self.0.registered_block
    }
    /// Its record over its tasks.
    async fn record(&self) -> AgentRecord {
        let s = &self.0.stats;
        AgentRecord {
            tasks: s.tasks,
            completed: s.completed,
            disputed: s.disputed,
            refunded: s.refunded,
            expired: s.expired,
            declined: s.declined,
            earnings: s.earnings.base_units().to_string(),
            median_accept_secs: s.median_accept_secs,
            median_completion_secs: s.median_completion_secs,
            success_rate: s.success_rate,
            last_active_at: s.last_active_at,
        }
    }
    /// Its record weighed by the money behind it.
    async fn weight(&self) -> Weight {
        let e = &self.0.stats.evidence;
        Weight {
            completed: e.completed,
            failed: e.failed,
            settled: e.settled(),
            funders: e.funders,
            linked_funders: e.linked_funders,
            below_floor: e.below_floor,
        }
    }
    /// Its ERC-8004 identity, when it linked one.
    async fn identity(&self) -> Option<Identity> {
        self.0.identity.as_ref().map(|i| Identity {
            agent_id: i.agent_id.clone(),
            linked_block: i.linked_block,
            tx: i.tx.clone(),
        })
    }
    /// ERC-8004 feedback on its identity.
    async fn feedback(&self) -> Feedback {
        let f = &self.0.feedback;
        Feedback {
            count: f.count,
            matched: f.matched,
            average: f.average,
            latest: f
                .latest
                .iter()
                .map(|v| FeedbackEntry {
                    client: v.client.clone(),
                    index: v.index,
                    value: v.value.clone(),
                    value_decimals: v.value_decimals,
                    document: Document::of(&v.uri),
                    task_id: v.task_id.clone(),
                    matched: v.matched,
                    why: v.why.clone(),
                    revoked: v.revoked,
                    block: v.block,
                })
                .collect(),
        }
    }
    /// The tasks it executes, one page.
    #[graphql(complexity = "5 + super::types::page_cost(first, child_complexity)")]
    async fn tasks(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        status: Option<Vec<String>>,
    ) -> Result<TaskConnection> {
        let filter =
            TaskFilter { executor: Some(self.0.agent.clone()), status, ..TaskFilter::default() };
        task_page(index(ctx)?, filter, first, after).await
    }
}

/// A page of agents.
#[derive(Debug, SimpleObject)]
pub struct AgentConnection {
    /// The agents, by address.
    pub nodes: Vec<Agent>,
    /// Where the page ends.
    pub page_info: PageInfo,
}

/// An agent offering a capability.
#[derive(Debug, Clone, SimpleObject)]
pub struct Offerer {
    /// Address.
    pub agent: String,
    /// Its card's id.
    pub card: Option<String>,
    /// Its price, base units.
    pub price: String,
    /// Tasks settled that say something about it.
    pub settled: Option<u64>,
    /// Of those, completed.
    pub completed: Option<u64>,
    /// Reliability (0-1) as the executor choice scores it.
    pub reliability: Option<f64>,
}

/// A capability of the live catalogue.
#[derive(Debug)]
pub struct Capability(Entry);

#[Object]
impl Capability {
    /// Its name.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// Whether Tessera's own runners implement it.
    async fn builtin(&self) -> bool {
        self.0.builtin
    }
    /// What it says of itself (its descriptor, as JSON).
    async fn describe(&self) -> Json<Value> {
        Json(serde_json::to_value(&self.0.describe).unwrap_or(Value::Null))
    }
    /// How many active agents offer it.
    async fn offered_by(&self) -> usize {
        self.0.offered_by
    }
    /// The active agents offering it, cheapest first.
    async fn offerers(&self) -> Vec<Offerer> {
        self.0
            .offerers
            .iter()
            .map(|o| Offerer {
                agent: o.agent.clone(),
                card: o.card.clone(),
                price: o.price.clone(),
                settled: o.record.as_ref().map(|r| r.settled),
                completed: o.record.as_ref().map(|r| r.completed),
                reliability: o.record.as_ref().map(|r| r.reliability),
            })
            .collect()
    }
}

/// An arbiter's ruling on a dispute.
#[derive(Debug, Clone, SimpleObject)]
pub struct Ruling {
    /// Who ruled.
    pub arbiter: String,
    /// The executor's share, basis points (10000: all of it).
    pub executor_share_bps: u16,
    /// The client's share, basis points.
    pub client_share_bps: u16,
    /// The ruling's rationale, decoded.
    pub rationale: Document,
    /// Chain time.
    pub at: u64,
    /// Block.
    pub block: u64,
    /// Transaction hash.
    pub tx_hash: String,
}

/// A dispute's opening, or an appeal: who, why, when.
#[derive(Debug, Clone, SimpleObject)]
pub struct Challenge {
    /// Who disputed or appealed.
    pub by: String,
    /// Their reason, decoded.
    pub reason: Document,
    /// Chain time.
    pub at: u64,
    /// Block.
    pub block: u64,
    /// Transaction hash.
    pub tx_hash: String,
}

/// A disputed task's dispute, as its events tell it.
#[derive(Debug)]
pub struct Dispute {
    task: TaskView,
    opened: Option<Challenge>,
    ruling: Option<Ruling>,
    appeal: Option<Challenge>,
    appeal_ruling: Option<Ruling>,
}

impl Dispute {
    fn of(task: TaskView, events: Vec<PlacedDisputeEvent>) -> Self {
        let mut d = Self { task, opened: None, ruling: None, appeal: None, appeal_ruling: None };
        for e in events {
            let (block, tx_hash) = (e.block, e.tx_hash);
            match e.event {
                DisputeEvent::Disputed { client, reason_uri, at } => {
                    d.opened = Some(Challenge {
                        by: client,
                        reason: Document::of(&reason_uri),
                        at,
                        block,
                        tx_hash,
                    });
                }
                DisputeEvent::Appealed { appellant, reason_uri, at } => {
                    d.appeal = Some(Challenge {
                        by: appellant,
                        reason: Document::of(&reason_uri),
                        at,
                        block,
                        tx_hash,
                    });
                }
                DisputeEvent::Ruled { appeal, arbiter, executor_share_bps, rationale_uri, at } => {
                    let r = Ruling {
                        arbiter,
                        executor_share_bps,
                        client_share_bps: 10_000u16.saturating_sub(executor_share_bps),
                        rationale: Document::of(&rationale_uri),
                        at,
                        block,
                        tx_hash,
                    };
                    if appeal {
                        d.appeal_ruling = Some(r);
                    } else {
                        d.ruling = Some(r);
                    }
                }
            }
        }
        d
    }
}

#[Object]
impl Dispute {
    /// The disputed task.
    async fn task(&self) -> Task {
        Task(self.task.clone())
    }
    /// Where it stands: the task's status (`Disputed`, `Ruled`, `Appealed`,
    /// or how it settled).
    async fn status(&self) -> &str {
        &self.task.status
    }
    /// The client's dispute: who, why, when.
    async fn opened(&self) -> Option<&Challenge> {
        self.opened.as_ref()
    }
    /// The arbiter's ruling.
    async fn ruling(&self) -> Option<&Ruling> {
        self.ruling.as_ref()
    }
    /// The appeal of the ruling.
    async fn appeal(&self) -> Option<&Challenge> {
        self.appeal.as_ref()
    }
    /// The appeal arbiter's ruling (final).
    async fn appeal_ruling(&self) -> Option<&Ruling> {
        self.appeal_ruling.as_ref()
    }
    /// The verdict standing: the appeal's ruling, else the ruling.
    async fn verdict(&self) -> Option<&Ruling> {
        self.appeal_ruling.as_ref().or(self.ruling.as_ref())
    }
    /// What the executor was paid at settlement, base units.
    async fn executor_paid(&self) -> String {
        self.task.executor_paid.base_units().to_string()
    }
}

/// A page of disputes.
#[derive(Debug, SimpleObject)]
pub struct DisputeConnection {
    /// The disputes, by task id.
    pub nodes: Vec<Dispute>,
    /// Where the page ends.
    pub page_info: PageInfo,
}

/// A reorganisation and what it took away.
#[derive(Debug, Clone)]
pub struct Reorg(pub crate::store::Reorg);

#[Object]
impl Reorg {
    /// Journal position.
    async fn seq(&self) -> i64 {
        self.0.seq
    }
    /// Head when it was noticed.
    async fn detected_head(&self) -> u64 {
        self.0.detected_head
    }
    /// First block that changed.
    async fn fork_block(&self) -> u64 {
        self.0.fork_block
    }
    /// Blocks rolled back.
    async fn depth(&self) -> u64 {
        self.0.depth
    }
    /// Events removed.
    async fn orphaned_events(&self) -> u64 {
        self.0.orphaned_events
    }
    /// Tasks whose history changed.
    async fn affected_tasks(&self) -> &[String] {
        &self.0.affected_tasks
    }
}

/// Where the index stands.
#[derive(Debug, Clone, SimpleObject)]
pub struct Status {
    /// Chain head at the last pass.
    pub head: u64,
    /// Highest block indexed.
    pub indexed_block: u64,
    /// Highest block past the reorganisation depth.
    pub safe_block: u64,
    /// Blocks a reorganisation may reach back.
    pub reorg_depth: u64,
    /// Events stored.
    pub events: i64,
}

/// The queries.
#[derive(Debug)]
pub struct Query;

#[Object]
impl Query {
    /// Where the index stands.
    #[graphql(complexity = 5)]
    async fn status(&self, ctx: &Context<'_>) -> Result<Status> {
        let i = index(ctx)?;
        let p = *i.progress.borrow();
        Ok(Status {
            head: p.head,
            indexed_block: p.indexed,
            safe_block: p.indexed.min(p.head.saturating_sub(i.reorg_depth)),
            reorg_depth: i.reorg_depth,
            events: i.store.event_count().await.map_err(db_error)?,
        })
    }

    /// One task.
    #[graphql(complexity = "5 + child_complexity")]
    async fn task(&self, ctx: &Context<'_>, id: String) -> Result<Option<Task>> {
        params::task_id(&id)?;
        let t = index(ctx)?.store.task(&id).await.map_err(db_error)?;
        Ok(t.map(|d| Task(d.task)))
    }

    /// Tasks matching `filter`, by id, one page (`first` at most 500,
    /// continued `after` the previous page's end cursor).
    #[graphql(complexity = "5 + super::types::page_cost(first, child_complexity)")]
    async fn tasks(
        &self,
        ctx: &Context<'_>,
        filter: Option<TaskFilter>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<TaskConnection> {
        task_page(index(ctx)?, filter.unwrap_or_default(), first, after).await
    }

    /// A plan's lineage (its sponsor, when named; otherwise the funder of
    /// its first task).
    #[graphql(complexity = "50 + child_complexity")]
    async fn plan(&self, ctx: &Context<'_>, id: String, sponsor: Option<String>) -> Result<Plan> {
        let id = params::plan_id(&id)?;
        let sponsor = sponsor.map(|a| params::address("sponsor", &a)).transpose()?;
        let sponsor = sponsor.map(|a| a.parse().expect("a checked address parses"));
        let tree = index(ctx)?.store.plan_tree_of(&id, sponsor).await.map_err(db_error)?;
        Ok(Plan(Arc::new(tree)))
    }

    /// One agent.
    #[graphql(complexity = "20 + child_complexity")]
    async fn agent(&self, ctx: &Context<'_>, address: String) -> Result<Option<Agent>> {
        params::address("agent", &address)?;
        let a = index(ctx)?.store.agent(&address).await.map_err(db_error)?;
        Ok(a.map(Agent))
    }

    /// Agents by address, one page; only those in `status` (`active`,
    /// `paused`, `left`) when given.
    #[graphql(complexity = "5 + super::types::page_cost(first, 20 + child_complexity)")]
    async fn agents(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        status: Option<String>,
    ) -> Result<AgentConnection> {
        let limit = page(first)?;
        if let Some(a) = after.as_deref().filter(|a| !a.is_empty()) {
            params::address("after", a)?;
        }
        let status = status
            .map(|s| {
                crate::derive::AgentStatus::parse(&s).map_err(|_| {
                    Error::new(format!("{s:?} is not an agent status (active, paused, left)"))
                })
            })
            .transpose()?;
        let i = index(ctx)?;
        let (addresses, next) =
            i.store.agent_page(after.as_deref(), status, limit).await.map_err(db_error)?;
        let mut nodes = Vec::with_capacity(addresses.len());
        for a in addresses {
            if let Some(v) = i.store.agent(&a).await.map_err(db_error)? {
                nodes.push(Agent(v));
            }
        }
        Ok(AgentConnection {
            nodes,
            page_info: PageInfo { has_next_page: next.is_some(), end_cursor: next },
        })
    }

    /// The live capability catalogue, optionally one capability's entry,
    /// or the capabilities one agent offers.
    #[graphql(complexity = "20 + 10 * child_complexity")]
    async fn capabilities(
        &self,
        ctx: &Context<'_>,
        name: Option<String>,
        offered_by: Option<String>,
    ) -> Result<Vec<Capability>> {
        if let Some(a) = &offered_by {
            params::address("offeredBy", a)?;
        }
        let catalogue = index(ctx)?.store.catalogue().await.map_err(db_error)?;
        Ok(catalogue
            .entries
            .into_iter()
            .filter(|e| name.as_ref().is_none_or(|n| *n == e.name))
            .filter(|e| {
                offered_by
                    .as_ref()
                    .is_none_or(|a| e.offerers.iter().any(|o| o.agent.eq_ignore_ascii_case(a)))
            })
            .map(Capability)
            .collect())
    }

    /// Disputed tasks' disputes, by task id, one page; filtered as tasks
    /// are (`disputed` is implied).
    #[graphql(complexity = "5 + super::types::page_cost(first, 10 + child_complexity)")]
    async fn disputes(
        &self,
        ctx: &Context<'_>,
        filter: Option<TaskFilter>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<DisputeConnection> {
        let i = index(ctx)?;
        let filter = TaskFilter { disputed: Some(true), ..filter.unwrap_or_default() };
        let q = filter.query(after, page(first)?)?;
        let (tasks, next) = i.store.task_page(&q).await.map_err(db_error)?;
        let mut nodes = Vec::with_capacity(tasks.len());
        for t in tasks {
            let events = i.store.dispute_events(&t.task_id).await.map_err(db_error)?;
            nodes.push(Dispute::of(t, events));
        }
        Ok(DisputeConnection {
            nodes,
            page_info: PageInfo { has_next_page: next.is_some(), end_cursor: next },
        })
    }

    /// The latest reorganisations, newest first (`first` at most 500).
    #[graphql(complexity = "5 + super::types::page_cost(first, child_complexity)")]
    async fn reorgs(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<Vec<Reorg>> {
        let n = page(first)? as usize;
        let all = index(ctx)?.store.reorgs().await.map_err(db_error)?;
        Ok(all.into_iter().take(n).map(Reorg).collect())
    }
}
