//! What the API serves, as typed rows: task pages, one task with its
//! history, agents with their statistics, disputes, the reorganisation
//! journal (a plan's lineage, ancestors and descendants are in
//! [`super::lineage`]).

use alloy::primitives::U256;
use sqlx::{Row, any::AnyRow};
use tessera_db::DbError;

use super::{
    AgentFilter, DisputeFilter, IndexStore, MAX_LISTED, MEDIAN_SAMPLE, Reorg, TaskQuery,
    codecs::{AnyQuery, Param, amount_from_column, bytes_hex, history_entries, id_bytes},
    derivation::TASK_COLUMNS,
    evidence::EVIDENCE_FLOOR_UNITS,
    rows::{AgentStats, AgentView, TaskDetail, TaskTransaction, TaskView, task_from_row},
    totals::Totals,
};
use tessera_bindings::card::AgentCard;

use crate::derive::AgentStatus;

/// The columns a list of tasks reads (all but `history`), with `prefix`.
pub(super) fn listed_task_columns(prefix: &str) -> String {
    let listed = &TASK_COLUMNS.columns[..TASK_COLUMNS.columns.len() - 1];
    listed.iter().map(|(c, _)| format!("{prefix}{c}")).collect::<Vec<_>>().join(", ")
}

impl IndexStore {
    /// Tasks matching `q`, ordered by id as text (stable for paging, not
    /// numeric: ids are hashes): one page of `q.limit` and the
    /// cursor of the next page when there is one.
    pub async fn task_page(
        &self,
        q: &TaskQuery,
    ) -> Result<(Vec<TaskView>, Option<String>), DbError> {
        let limit = q.limit.max(1);
        let mut w = Where::default();
        if !q.status.is_empty() {
            let marks: Vec<String> = (0..q.status.len()).map(|i| w.next_mark(i)).collect();
            w.raw(&format!("status IN ({})", marks.join(", ")));
            for st in &q.status {
                w.binds.push(Param::Text(st.clone()));
            }
        }
        // Children are found through an index of the tasks that have a
        // parent (most are roots), which a query must say it looks in.
        if q.parent.as_deref().is_some_and(|p| p != "0") {
            w.raw("parent_id <> '0'");
        }
        for (cond, v) in [
            ("executor =", &q.executor),
            ("client =", &q.client),
            ("funder =", &q.funder),
            ("plan_id =", &q.plan),
            ("parent_id =", &q.parent),
            ("capability =", &q.capability),
            ("task_id >", &q.after),
        ] {
            if let Some(v) = v {
                w.text(cond, v);
            }
        }
        for (cond, v) in [
            ("created_block >=", q.created_block_from),
            ("created_block <=", q.created_block_to),
            ("created_at >=", q.created_at_from),
            ("created_at <=", q.created_at_to),
            ("updated_block >=", q.changed_since_block),
            ("disputed =", q.disputed.map(i64::from)),
            ("rating <", q.rating_below),
        ] {
            if let Some(v) = v {
                w.int(cond, v);
            }
        }
        let sql = format!(
            "SELECT {} FROM ix_tasks WHERE {} ORDER BY task_id LIMIT {}",
            listed_task_columns(""),
            w.sql(),
            limit + 1
        );
        let rows = w.bind(sqlx::query(&sql)).fetch_all(&self.api).await?;
        let out: Vec<TaskView> = rows.iter().map(task_from_row).collect::<Result<_, _>>()?;
        Ok(page_of(out, limit, |t| t.task_id.clone()))
    }

    /// One task with its transitions and the transactions of its first
    /// [`MAX_LISTED`] events (a funder can reassign a task any number of
    /// times, each an event).
    pub async fn task(&self, id: &str) -> Result<Option<TaskDetail>, DbError> {
        let Some(row) = sqlx::query("SELECT * FROM ix_tasks WHERE task_id = $1")
            .bind(id)
            .fetch_optional(&self.api)
            .await?
        else {
            return Ok(None);
        };
        let task = task_from_row(&row)?;
        let history = history_entries(&row.try_get::<String, _>("history")?)?;
        let Ok(key) = id.parse::<U256>() else { return Ok(None) };
        let txs = sqlx::query(&format!(
            "SELECT block, tx_hash, kind FROM ix_events WHERE task_id = $1 \
             ORDER BY block, log_index LIMIT {MAX_LISTED}"
        ))
        .bind(id_bytes(key))
        .fetch_all(&self.api)
        .await?;
        let transactions = txs
            .iter()
            .map(|r| {
                Ok(TaskTransaction {
                    block: r.try_get("block")?,
                    event: r.try_get("kind")?,
                    tx_hash: bytes_hex(&r.try_get::<Vec<u8>, _>("tx_hash")?),
                })
            })
            .collect::<Result<_, DbError>>()?;
        Ok(Some(TaskDetail { task, history, transactions }))
    }

    /// Registry state of the first [`MAX_LISTED`] agents (by address), with
    /// derived stats: [`Self::agents_matching`] with no filter.
    pub async fn agents(&self) -> Result<Vec<AgentView>, DbError> {
        Ok(self.agents_matching(&AgentFilter::default()).await?.0)
    }

    /// Registry state of the agents matching `f` (by address, a page of
    /// at most [`MAX_LISTED`]), with derived stats, and the cursor of the
    /// next page. Anyone can register an agent, so the list is paged.
    pub async fn agents_matching(
        &self,
        f: &AgentFilter,
    ) -> Result<(Vec<AgentView>, Option<String>), DbError> {
        let limit = f.limit.unwrap_or(MAX_LISTED).clamp(1, MAX_LISTED);
        let mut w = Where::default();
        if let Some(v) = &f.status {
            w.text("status =", v);
        }
        if let Some(v) = &f.capability {
            // Offers are a JSON object keyed by capability name; a name is
            // `[a-z0-9-]`, so it needs no escaping in a pattern.
            w.text("offers LIKE", &format!("%\"{v}\":%"));
        }
        if let Some(v) = &f.cursor {
            w.text("agent >", v);
        }
        let sql = format!(
            "SELECT agent FROM ix_agents WHERE {} ORDER BY agent LIMIT {}",
            w.sql(),
            limit + 1
        );
        let rows = w.bind(sqlx::query(&sql)).fetch_all(&self.api).await?;
        let addresses: Vec<String> =
            rows.iter().map(|r| r.try_get::<String, _>("agent")).collect::<Result<_, _>>()?;
        let (addresses, next) = page_of(addresses, limit, Clone::clone);
        let mut out = Vec::new();
        for a in &addresses {
            if let Some(a) = self.agent(a).await? {
                out.push(a);
            }
        }
        Ok((out, next))
    }

    /// One agent with its stats: completed, disputed, refunded, expired, declined, earnings and
    /// success rate over all its tasks (the sums kept as they are folded:
    /// [`super::totals`]), median
    /// accept and completion latency over its latest [`MEDIAN_SAMPLE`] paid
    /// at least the evidence floor (tasks too cheap to count do not set its
    /// latency either), and the record weighed by the money behind it.
    pub async fn agent(&self, agent: &str) -> Result<Option<AgentView>, DbError> {
        let Some(row) = sqlx::query("SELECT * FROM ix_agents WHERE LOWER(agent) = $1")
            .bind(agent.to_lowercase())
            .fetch_optional(&self.api)
            .await?
        else {
            return Ok(None);
        };
        let address: String = row.try_get("agent")?;
        let mut totals = Totals::default();
        for (_, t) in self.totals(&address).await? {
            totals.add(&t);
        }
        let latest = sqlx::query(&format!(
            "SELECT created_at, accepted_at, completed_at FROM ix_tasks \
             WHERE executor = $1 AND accepted_at IS NOT NULL \
             AND amount_units >= {EVIDENCE_FLOOR_UNITS} \
             ORDER BY created_block DESC, task_id DESC LIMIT {MEDIAN_SAMPLE}"
        ))
        .bind(&address)
        .fetch_all(&self.api)
        .await?;
        let mut accept = Vec::new();
        let mut complete = Vec::new();
        for t in &latest {
            let created: i64 = t.try_get("created_at")?;
            if let Some(a) = t.try_get::<Option<i64>, _>("accepted_at")? {
                accept.push(a - created);
                if let Some(c) = t.try_get::<Option<i64>, _>("completed_at")? {
                    complete.push(c - a);
                }
            }
        }
        let (completed, settled) = (totals.completed, totals.settled);
        let offers = serde_json::from_str(&row.try_get::<String, _>("offers")?).ok();
        let metadata_uri: String = row.try_get("metadata_uri")?;
        let (identity, feedback, listed) = self.feedback_summary(&address).await?;
        let evidence = self.evidence_with(&address, None, &listed).await?;
        Ok(Some(AgentView {
            identity,
            feedback,
            agent: address,
            status: AgentStatus::parse(&row.try_get::<String, _>("status")?)
                .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
            name: AgentCard::from_uri(&metadata_uri).ok().map(|card| card.id),
            metadata_uri,
            offers,
            registered_block: row.try_get("registered_block")?,
            stats: AgentStats {
                tasks: totals.tasks,
                completed,
                disputed: totals.disputed,
                refunded: totals.refunded,
                expired: totals.expired,
                declined: totals.declined,
                earnings: amount_from_column(totals.earnings, "ix_agent_totals")?,
                median_accept_secs: median(&mut accept),
                median_completion_secs: median(&mut complete),
                success_rate: (settled != 0).then(|| completed as f64 / settled as f64),
                evidence,
                last_active_at: totals.last_active_at,
            },
        }))
    }

    /// The latest [`MAX_LISTED`] tasks that were ever disputed, latest
    /// change first: [`Self::disputes_matching`] with no filter.
    pub async fn disputes(&self) -> Result<Vec<TaskView>, DbError> {
        let all = DisputeFilter { limit: Some(MAX_LISTED), ..DisputeFilter::default() };
        Ok(self.disputes_matching(&all).await?.0)
    }

    /// Tasks that were ever disputed and match `f`, latest change first
    /// (then by id), one page, with the cursor of the next
    /// (`<updated block>:<task id>` of the page's last task).
    pub async fn disputes_matching(
        &self,
        f: &DisputeFilter,
    ) -> Result<(Vec<TaskView>, Option<String>), DbError> {
        let limit = f.limit.unwrap_or(MAX_LISTED).clamp(1, MAX_LISTED);
        let mut w = Where::default();
        w.int("disputed =", 1);
        if let Some(state) = &f.state {
            match state.as_str() {
                "awaiting_ruling" => w.text("status =", "Disputed"),
                "appealable" => w.text("status =", "Ruled"),
                "awaiting_appeal_ruling" => w.text("status =", "Appealed"),
                _ => w.raw("status NOT IN ('Disputed', 'Ruled', 'Appealed')"),
            }
        }
        if let Some(verdict) = &f.verdict {
            let share = "COALESCE(appeal_share_bps, ruling_share_bps)";
            match verdict.as_str() {
                "worker" => w.raw(&format!("{share} >= 10000")),
                "client" => w.raw(&format!("{share} = 0")),
                _ => w.raw(&format!("{share} > 0 AND {share} < 10000")),
            }
        }
        if let Some(appealed) = f.appealed {
            w.raw(if appealed { "appealed_at IS NOT NULL" } else { "appealed_at IS NULL" });
        }
        if let Some(v) = &f.executor {
            w.text("executor =", v);
        }
        if let Some(v) = &f.client {
            w.text("client =", v);
        }
        if let Some(v) = &f.plan {
            w.text("plan_id =", &v.to_lowercase());
        }
        if let Some((block, task)) = f.cursor.as_deref().and_then(|c| c.split_once(':')) {
            let block: i64 = block.parse().unwrap_or(i64::MAX);
            w.int("updated_block <=", block);
            // Past the cursor: an older change, or the same block and a later id.
            let (b, t) = (w.next_mark(0), w.next_mark(1));
            w.raw(&format!("(updated_block < {b} OR task_id > {t})"));
            w.binds.push(Param::Int(block));
            w.binds.push(Param::Text(task.to_owned()));
        }
        let sql = format!(
            "SELECT {} FROM ix_tasks WHERE {} ORDER BY updated_block DESC, task_id LIMIT {}",
            listed_task_columns(""),
            w.sql(),
            limit + 1
        );
        let rows = w.bind(sqlx::query(&sql)).fetch_all(&self.api).await?;
        let out: Vec<TaskView> = rows.iter().map(task_from_row).collect::<Result<_, _>>()?;
        Ok(page_of(out, limit, |t| format!("{}:{}", t.updated_block, t.task_id)))
    }

    /// The latest [`MAX_LISTED`] entries of the reorganisation journal,
    /// newest first.
    pub async fn reorgs(&self) -> Result<Vec<Reorg>, DbError> {
        let rows =
            sqlx::query(&format!("SELECT * FROM ix_reorgs ORDER BY seq DESC LIMIT {MAX_LISTED}"))
                .fetch_all(&self.api)
                .await?;
        rows.iter().map(reorg_from_row).collect()
    }

    /// Number of stored events.
    pub async fn event_count(&self) -> Result<i64, DbError> {
        Ok(sqlx::query("SELECT COUNT(*) AS n FROM ix_events")
            .fetch_one(&self.api)
            .await?
            .try_get("n")?)
    }
}

/// A journal entry of `ix_reorgs`; a negative count or an unreadable task
/// list is a corrupt row.
fn reorg_from_row(r: &AnyRow) -> Result<Reorg, DbError> {
    let count = |column: &str| -> Result<u64, DbError> {
        let v: i64 = r.try_get(column)?;
        u64::try_from(v)
            .map_err(|_| DbError::Corrupt { table: "ix_reorgs", detail: format!("{column} {v}") })
    };
    let tasks: String = r.try_get("affected_tasks")?;
    Ok(Reorg {
        seq: r.try_get("seq")?,
        detected_head: count("detected_head")?,
        fork_block: count("fork_block")?,
        depth: count("depth")?,
        orphaned_events: count("orphaned_events")?,
        affected_tasks: serde_json::from_str(&tasks).map_err(|e| DbError::Corrupt {
            table: "ix_reorgs",
            detail: format!("affected_tasks {tasks:?}: {e}"),
        })?,
    })
}

/// The conditions of a list's `WHERE`, each with its bound value, numbered
/// `$1`, `$2`, … in order (every condition is ANDed).
#[derive(Debug, Default)]
struct Where {
    conditions: Vec<String>,
    binds: Vec<Param>,
}

impl Where {
    /// `{cond} $n`, `v` bound as text.
    fn text(&mut self, cond: &str, v: &str) {
        self.binds.push(Param::Text(v.to_owned()));
        self.conditions.push(format!("{cond} ${}", self.binds.len()));
    }

    /// `{cond} $n`, `v` bound as an integer.
    fn int(&mut self, cond: &str, v: i64) {
        self.binds.push(Param::Int(v));
        self.conditions.push(format!("{cond} ${}", self.binds.len()));
    }

    /// A condition with no value of its own (or whose values the caller
    /// binds with [`Where::next_mark`]).
    fn raw(&mut self, cond: &str) {
        self.conditions.push(cond.to_owned());
    }

    /// The parameter mark `offset` places after those bound so far.
    fn next_mark(&self, offset: usize) -> String {
        format!("${}", self.binds.len() + 1 + offset)
    }

    /// The conditions, ANDed (`1 = 1` for none).
    fn sql(&self) -> String {
        if self.conditions.is_empty() {
            return "1 = 1".into();
        }
        self.conditions.join(" AND ")
    }

    /// Binds every value, in order.
    fn bind<'q>(&self, mut q: AnyQuery<'q>) -> AnyQuery<'q> {
        for b in &self.binds {
            q = b.clone().bind(q);
        }
        q
    }
}

/// One page of `limit` from `rows` read with `LIMIT limit + 1`, and the
/// cursor of the next page (the page's last row's, by `cursor`) when a row
/// was read past it.
pub(super) fn page_of<T>(
    mut rows: Vec<T>,
    limit: i64,
    cursor: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
    if rows.len() <= limit {
        return (rows, None);
    }
    rows.truncate(limit);
    let next = rows.last().map(cursor);
    (rows, next)
}

/// The median of `v`, when it holds any.
fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}
