//! A plan's lineage as the API serves it: the plan's tree with its
//! subtree costs and the foreign tasks naming it, and a task's ancestors
//! and descendants (bounded recursive queries that run on SQLite and
//! PostgreSQL alike; parent cycles listed `detached`).

use std::collections::{BTreeMap, BTreeSet};

use alloy::primitives::Address;
use sqlx::Row;
use tessera_db::{Backend, DbError};

use super::{
    IndexStore, Lineage, MAX_LINEAGE_DEPTH, MAX_LINEAGE_TASKS, MAX_LISTED,
    queries::listed_task_columns,
    rows::{PlanTree, TaskView, TreeNode, task_from_row},
};
use tessera_bindings::usdc::Usdc;

/// Which way a lineage walk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// To parents and inputs.
    Up,
    /// To the tasks naming this one as parent or input.
    Down,
}

/// Whether `edges` (downstream, upstream) close a cycle: Kahn's
/// algorithm leaves a task unremoved exactly when it is on or behind one.
fn has_cycle(edges: &[(String, String)]) -> bool {
    let mut pending: BTreeMap<&str, usize> = BTreeMap::new();
    let mut upstreams: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut unique: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (down, up) in edges {
        if !unique.insert((down.as_str(), up.as_str())) {
            continue;
        }
        *pending.entry(up.as_str()).or_default() += 1;
        pending.entry(down.as_str()).or_default();
        upstreams.entry(down.as_str()).or_default().push(up.as_str());
    }
    // Remove tasks nothing downstream of them remains for, repeatedly.
    let mut free: Vec<&str> = pending.iter().filter(|(_, n)| **n == 0).map(|(t, _)| *t).collect();
    let mut removed = 0;
    while let Some(t) = free.pop() {
        removed += 1;
        for up in upstreams.get(t).into_iter().flatten() {
            let n = pending.get_mut(up).expect("every upstream is counted");
            *n -= 1;
            if *n == 0 {
                free.push(up);
            }
        }
    }
    removed < pending.len()
}

impl IndexStore {
    /// A plan's lineage: every task of the plan with its depth under the plan
    /// and the cost of its subtree; tasks whose parent is not indexed (yet)
    /// are listed as pending. Parents are caller-chosen on chain, so the
    /// walk is bounded ([`MAX_LINEAGE_DEPTH`] levels, [`MAX_LINEAGE_TASKS`]
    /// tasks) and a task in or under a parent cycle, or deeper than the
    /// limit, is listed `detached` with no depth instead of being followed.
    ///
    /// Anyone may name a plan, or any task, as the parent of a task they
    /// fund. The tree holds only the tasks of the plan's sponsor (the
    /// funder of its first task, see [`Self::plan_sponsor`]) and, under
    /// each, the tasks funded by that task's executor (an agent hiring for
    /// its own task), recursively. Any other task naming the plan or one of
    /// the tree's tasks is listed apart as `foreign` (at most
    /// [`MAX_LISTED`]): never in the tree's costs, nor in its bound.
    pub async fn plan_tree(&self, plan: &str) -> Result<PlanTree, DbError> {
        self.plan_tree_of(plan, None).await
    }

    /// [`Self::plan_tree`] with the plan's sponsor named (`None`: the funder
    /// of its first task).
    pub async fn plan_tree_of(
        &self,
        plan: &str,
        sponsor: Option<Address>,
    ) -> Result<PlanTree, DbError> {
        let plan = plan.to_lowercase();
        let sponsor = match sponsor {
            Some(a) => Some(a.to_string()),
            None => self.plan_sponsor(&plan).await?,
        };
        let Some(sponsor) = sponsor else {
            return Ok(PlanTree {
                plan_id: plan,
                sponsor: None,
                tasks: Vec::new(),
                truncated: false,
                foreign: Vec::new(),
                foreign_truncated: false,
            });
        };
        let rows = sqlx::query(&format!(
            "{} SELECT {}, tree.depth AS depth FROM (SELECT task_id, depth FROM tree LIMIT {}) tree \
               JOIN ix_tasks t ON t.task_id = tree.task_id",
            self.members_cte(),
            listed_task_columns("t."),
            MAX_LINEAGE_TASKS + 1,
        ))
        .bind(&plan)
        .bind(&sponsor)
        .fetch_all(&self.api)
        .await?;
        let mut truncated = rows.len() as i64 > MAX_LINEAGE_TASKS;
        let mut nodes = Vec::with_capacity(rows.len());
        for r in rows.iter().take(MAX_LINEAGE_TASKS as usize) {
            nodes.push(TreeNode {
                task: task_from_row(r)?,
                depth: Some(r.try_get("depth")?),
                pending_parent: false,
                detached: false,
                subtree_cost: Usdc::ZERO,
                inputs: Vec::new(),
                merge: false,
            });
        }
        nodes.sort_by(|a, b| {
            let key = |t: &TreeNode| (t.depth, t.task.created_block);
            key(a).cmp(&key(b)).then_with(|| a.task.task_id.cmp(&b.task.task_id))
        });
        let reached: BTreeSet<String> = nodes.iter().map(|t| t.task.task_id.clone()).collect();
        for t in &mut nodes {
            let parent = t.task.parent_id.as_str();
            t.pending_parent = parent != "0" && !reached.contains(parent);
        }
        // The sponsor's tasks of the plan no root reaches: in or under a
        // parent cycle, or below the depth limit.
        if !truncated {
            let rows = sqlx::query(&format!(
                "SELECT {} FROM ix_tasks WHERE plan_id = $1 AND funder = $2 \
                 ORDER BY created_block, task_id LIMIT {}",
                listed_task_columns(""),
                MAX_LINEAGE_TASKS + 1,
            ))
            .bind(&plan)
            .bind(&sponsor)
            .fetch_all(&self.api)
            .await?;
            truncated = rows.len() as i64 > MAX_LINEAGE_TASKS;
            for r in &rows {
                let id: String = r.try_get("task_id")?;
                if !reached.contains(&id) && nodes.len() < MAX_LINEAGE_TASKS as usize {
                    nodes.push(TreeNode {
                        task: task_from_row(r)?,
                        depth: None,
                        pending_parent: false,
                        detached: true,
                        subtree_cost: Usdc::ZERO,
                        inputs: Vec::new(),
                        merge: false,
                    });
                }
            }
        }
        subtree_costs(&mut nodes)?;
        self.input_edges(&mut nodes).await?;
        let listed: BTreeSet<String> = nodes.iter().map(|t| t.task.task_id.clone()).collect();
        let (foreign, foreign_truncated) = self.foreign(&plan, &sponsor, &listed).await?;
        Ok(PlanTree {
            plan_id: plan,
            sponsor: Some(sponsor),
            tasks: nodes,
            truncated,
            foreign,
            foreign_truncated,
        })
    }

    /// The sponsor of `plan` as the index sees it: the funder of its first
    /// task (the earliest naming the plan with no parent task, else the
    /// earliest naming it at all); `None` when no task names it.
    pub async fn plan_sponsor(&self, plan: &str) -> Result<Option<String>, DbError> {
        let row = sqlx::query(
            "SELECT funder FROM ix_tasks WHERE plan_id = $1 \
             ORDER BY CASE WHEN parent_id = '0' THEN 0 ELSE 1 END, created_block, task_id LIMIT 1",
        )
        .bind(plan)
        .fetch_optional(&self.api)
        .await?;
        Ok(row.map(|r| r.try_get("funder")).transpose()?)
    }

    /// The recursive `tree (task_id, executor, depth, path)` of a plan's
    /// members (`$1` the plan, `$2` its sponsor): the sponsor's tasks naming
    /// the plan with no indexed parent, then, under each member, the tasks
    /// funded by the sponsor or by that member's executor.
    fn members_cte(&self) -> String {
        format!(
            "WITH RECURSIVE tree (task_id, executor, depth, path) AS ( \
               SELECT task_id, executor, CAST(0 AS BIGINT), ',' || task_id || ',' FROM ix_tasks t \
                 WHERE plan_id = $1 AND funder = $2 AND (parent_id = '0' \
                 OR NOT EXISTS (SELECT 1 FROM ix_tasks p WHERE p.task_id = t.parent_id)) \
               UNION ALL \
               SELECT c.task_id, c.executor, tree.depth + 1, tree.path || c.task_id || ',' \
                 FROM ix_tasks c JOIN tree ON c.parent_id = tree.task_id \
                 WHERE c.parent_id <> '0' AND tree.depth < {MAX_LINEAGE_DEPTH} \
                   AND tree.path NOT LIKE '%,' || c.task_id || ',%' \
                   AND (c.funder = $2 OR c.funder = tree.executor) {} \
             )",
            self.recursive_limit(),
        )
    }

    /// The tasks naming `plan`, or a member of its tree as their parent,
    /// that are not in the tree (`listed`): funded by neither the sponsor
    /// nor their parent's executor. The first [`MAX_LISTED`] by creation,
    /// and whether there are more.
    async fn foreign(
        &self,
        plan: &str,
        sponsor: &str,
        listed: &BTreeSet<String>,
    ) -> Result<(Vec<TaskView>, bool), DbError> {
        let limit = MAX_LISTED + 1;
        let grafted = format!(
            "{}, members (task_id, executor) AS (SELECT task_id, executor FROM tree LIMIT {}) \
             SELECT {} FROM ix_tasks c JOIN members m ON c.parent_id = m.task_id \
             WHERE c.parent_id <> '0' AND c.funder <> $2 AND c.funder <> m.executor \
             ORDER BY c.created_block, c.task_id LIMIT {limit}",
            self.members_cte(),
            MAX_LINEAGE_TASKS + 1,
            listed_task_columns("c."),
        );
        let naming = format!(
            "SELECT {} FROM ix_tasks WHERE plan_id = $1 AND funder <> $2 \
             ORDER BY created_block, task_id LIMIT {limit}",
            listed_task_columns(""),
        );
        let mut found: BTreeMap<String, TaskView> = BTreeMap::new();
        let mut more = false;
        for sql in [grafted, naming] {
            let rows = sqlx::query(&sql).bind(plan).bind(sponsor).fetch_all(&self.api).await?;
            more |= rows.len() as i64 > MAX_LISTED;
            for r in &rows {
                let task = task_from_row(r)?;
                if !listed.contains(&task.task_id) {
                    found.insert(task.task_id.clone(), task);
                }
            }
        }
        let mut out: Vec<TaskView> = found.into_values().collect();
        out.sort_by(|a, b| (a.created_block, &a.task_id).cmp(&(b.created_block, &b.task_id)));
        if out.len() as i64 > MAX_LISTED {
            out.truncate(MAX_LISTED as usize);
            more = true;
        }
        Ok((out, more))
    }

    /// Fills in each node's input edges and whether it is a merge: the
    /// edges of the listed tasks themselves, so that tasks outside the
    /// tree cannot crowd them out.
    async fn input_edges(&self, nodes: &mut [TreeNode]) -> Result<(), DbError> {
        let ids: Vec<String> = nodes.iter().map(|t| t.task.task_id.clone()).collect();
        let mut inputs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for chunk in ids.chunks(super::INSERT_CHUNK) {
            let marks = (1..=chunk.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
            let sql = format!(
                "SELECT task_id, input_id FROM ix_task_inputs WHERE task_id IN ({marks}) \
                 ORDER BY task_id, position"
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.as_str());
            }
            for r in q.fetch_all(&self.api).await? {
                inputs.entry(r.try_get("task_id")?).or_default().push(r.try_get("input_id")?);
            }
        }
        for node in nodes {
            node.inputs = inputs.remove(&node.task.task_id).unwrap_or_default();
            let parent = &node.task.parent_id;
            let upstreams: BTreeSet<&str> = node
                .inputs
                .iter()
                .map(String::as_str)
                .chain((parent != "0").then_some(parent.as_str()))
                .collect();
            node.merge = upstreams.len() >= 2;
        }
        Ok(())
    }

    /// Ancestors of a task — its parent and the upstream tasks its envelope
    /// names as inputs, theirs, and so on — nearest first (by level, then
    /// id), each once, at most [`MAX_LINEAGE_DEPTH`] levels and
    /// [`MAX_LINEAGE_TASKS`] tasks. `cycle` says the walk came back to a
    /// task on its own path (parents and inputs are caller-chosen).
    pub async fn ancestors(&self, id: &str) -> Result<Lineage, DbError> {
        self.walk(id, Direction::Up).await
    }

    /// Descendants of a task — the tasks naming it as parent or as an
    /// input, theirs, and so on — breadth first, each once, within the same
    /// bounds as [`Self::ancestors`].
    pub async fn descendants(&self, id: &str) -> Result<Lineage, DbError> {
        self.walk(id, Direction::Down).await
    }

    /// A bounded breadth-first walk along every dependency edge from `id`:
    /// two indexed queries per level (parent links, input edges).
    async fn walk(&self, id: &str, direction: Direction) -> Result<Lineage, DbError> {
        let mut out = Lineage::default();
        // Edges met, as (downstream, upstream), for the cycle check.
        let mut edges: Vec<(String, String)> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::from([id.to_owned()]);
        let mut level: Vec<String> = vec![id.to_owned()];
        for depth in 0..=MAX_LINEAGE_DEPTH {
            let next = self.neighbours(&level, direction).await?;
            // Going up, only indexed tasks are listed: a task of the level
            // with no row of its own is left out.
            if direction == Direction::Up && depth > 0 {
                let indexed: BTreeSet<&str> = next.iter().map(|(t, _)| t.as_str()).collect();
                level.retain(|t| indexed.contains(t.as_str()));
                out.tasks.extend(level.iter().cloned());
            } else if depth > 0 {
                out.tasks.extend(level.iter().cloned());
            }
            let mut fresh: BTreeSet<String> = BTreeSet::new();
            for (from, to) in next {
                let Some(to) = to else { continue };
                let edge = match direction {
                    Direction::Up => (from, to.clone()),
                    Direction::Down => (to.clone(), from),
                };
                edges.push(edge);
                if !seen.contains(&to) {
                    fresh.insert(to);
                }
            }
            if fresh.is_empty() {
                break;
            }
            if depth == MAX_LINEAGE_DEPTH || out.tasks.len() >= MAX_LINEAGE_TASKS as usize {
                out.truncated = true;
                break;
            }
            let room = MAX_LINEAGE_TASKS as usize - out.tasks.len();
            if fresh.len() > room {
                out.truncated = true;
            }
            level = fresh.into_iter().take(room).collect();
            seen.extend(level.iter().cloned());
        }
        out.tasks.truncate(MAX_LINEAGE_TASKS as usize);
        out.cycle = has_cycle(&edges);
        Ok(out)
    }

    /// For each task of `level`: going up, `(task, Some(upstream))` per
    /// parent or input edge, and `(task, None)` for an indexed task with
    /// neither; going down, `(task, Some(downstream))` per task naming it.
    async fn neighbours(
        &self,
        level: &[String],
        direction: Direction,
    ) -> Result<Vec<(String, Option<String>)>, DbError> {
        let mut out = Vec::new();
        for chunk in level.chunks(super::INSERT_CHUNK) {
            let marks = (1..=chunk.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
            let limit = MAX_LINEAGE_TASKS + 1;
            let queries = match direction {
                Direction::Up => [
                    format!(
                        "SELECT task_id AS a, parent_id AS b FROM ix_tasks WHERE task_id IN ({marks})"
                    ),
                    format!(
                        "SELECT task_id AS a, input_id AS b FROM ix_task_inputs \
                         WHERE task_id IN ({marks}) ORDER BY task_id, position LIMIT {limit}"
                    ),
                ],
                Direction::Down => [
                    format!(
                        "SELECT parent_id AS a, task_id AS b FROM ix_tasks \
                         WHERE parent_id <> '0' AND parent_id IN ({marks}) \
                         ORDER BY task_id LIMIT {limit}"
                    ),
                    format!(
                        "SELECT input_id AS a, task_id AS b FROM ix_task_inputs \
                         WHERE input_id IN ({marks}) ORDER BY task_id LIMIT {limit}"
                    ),
                ],
            };
            for sql in &queries {
                let mut q = sqlx::query(sql);
                for id in chunk {
                    q = q.bind(id.as_str());
                }
                for r in q.fetch_all(&self.api).await? {
                    let a: String = r.try_get("a")?;
                    let b: String = r.try_get("b")?;
                    out.push((a, (b != "0").then_some(b)));
                }
            }
        }
        Ok(out)
    }

    /// The row cap of a recursive query's recursive step, where the
    /// database takes one (SQLite); PostgreSQL stops the recursion once the
    /// outer `LIMIT` has its rows.
    fn recursive_limit(&self) -> String {
        match self.backend {
            Backend::Sqlite => format!("LIMIT {}", MAX_LINEAGE_TASKS + 1),
            Backend::Postgres => String::new(),
        }
    }
}

/// Each node's `subtree_cost`: its amount plus those of its descendants in
/// `nodes` (a bounded tree; detached nodes count for themselves only). A
/// sum past what an amount holds is an error, not a clamp.
fn subtree_costs(nodes: &mut [TreeNode]) -> Result<(), DbError> {
    let index: BTreeMap<String, usize> =
        nodes.iter().enumerate().map(|(i, t)| (t.task.task_id.clone(), i)).collect();
    let mut cost: Vec<Usdc> = nodes.iter().map(|t| t.task.amount).collect();
    // Deepest first, so a child's total is complete before its parent's.
    let mut order: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].depth.is_some()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(nodes[i].depth));
    for i in order {
        if nodes[i].depth.unwrap_or(0) == 0 {
            continue;
        }
        let parent = index.get(&nodes[i].task.parent_id).copied();
        if let Some(p) = parent.filter(|&p| nodes[p].depth.is_some()) {
            cost[p] = cost[p].checked_add(cost[i]).ok_or_else(|| DbError::Corrupt {
                table: "ix_tasks",
                detail: format!("the subtree cost of task {} overflows", nodes[p].task.task_id),
            })?;
        }
    }
    for (t, c) in nodes.iter_mut().zip(cost) {
        t.subtree_cost = c;
    }
    Ok(())
}
